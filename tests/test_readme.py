"""The README's promises: the two set-up commands match CI, and the ten-line example runs as printed."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands_and_ci_runs_the_same_tests():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith("steer-envs demo")
    install, test = commands[1].split(" && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert install.replace("pip install", "pip install -q") in ci
    assert test in ci


def test_ten_line_example_runs(capsys):
    example = re.search(r"## Ten lines of Python\n\n```python\n(.*?)```", README, re.S).group(1)
    assert len(example.strip().splitlines()) <= 12
    exec(compile(example, "README.md", "exec"), {})
    f1, turns, interventions = capsys.readouterr().out.split()
    assert 0.0 <= float(f1) <= 1.0 and int(turns) >= 1 and int(interventions) >= 0
