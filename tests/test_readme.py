"""The README's promises: the two set-up commands match CI, and the ten-line example runs as printed."""
import re
from pathlib import Path

import pytest

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


def test_ten_line_example_runs_and_visibly_steers(capsys):
    example = re.search(r"## Ten lines of Python\n\n```python\n(.*?)```", README, re.S).group(1)
    assert len([line for line in example.strip().splitlines() if line.strip()]) <= 11
    exec(compile(example, "README.md", "exec"), {})
    rows = [dict(re.findall(r"(\w+)=([\d.]+)", line)) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and all(0.0 <= float(r["f1"]) <= 1.0 and int(r["turns"]) >= 1 for r in rows)
    assert rows[0]["interventions"] == "0" and rows[1]["interventions"] == "1"  # the rule fired: it steered


def test_sb3_quick_start_runs_as_written(capsys):
    import steer_envs.envs.catalogue as catalogue

    example = re.search(r"## Stable-Baselines3\n.*?```python\n(.*?)```", README, re.S).group(1)
    exec(compile(example, "README.md", "exec"), {})
    decision = capsys.readouterr().out.strip().removeprefix("first decision: ")
    assert decision in [t.name for t in catalogue.STEERING]


def test_every_command_is_in_the_command_table_with_its_memory_and_disk():
    from steer_envs.cli.main import build_parser
    from steer_envs.cli.registry import COMMANDS

    build_parser()  # loads the commands of agents / benchmarks too
    table = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    memory = README.split("### Memory and disk", 1)[1].split("\n## ", 1)[0]
    for name in COMMANDS:
        assert f"`steer-envs {name}" in table, f"steer-envs {name} is missing from the README's command table"
        assert f"| `{name}" in memory, f"steer-envs {name} is missing from the README's memory and disk table"
    assert "python -m pytest" in memory


@pytest.mark.slow
def test_trl_quick_start_runs_as_written(capsys, tmp_path, monkeypatch):
    """The README's TRL block, exec'd as written; ``STEER_ENVS_TRL_MODEL`` points it at the tiny tool-calling model
    of tests/integrations (no network: the block's default is a Hub id)."""
    pytest.importorskip("trl")
    from tests.integrations.test_trl import tool_model_and_data

    path, _ = tool_model_and_data()
    monkeypatch.setenv("STEER_ENVS_TRL_MODEL", str(path))
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.chdir(tmp_path)  # the block's output_dir is relative
    example = re.search(r"## Training with TRL, serving with OpenEnv\n.*?```python\n(.*?)```", README, re.S).group(1)
    exec(compile(example, "README.md", "exec"), {})
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("rewards:")][-1]
    rewards = eval(line.removeprefix("rewards:"))  # noqa: S307 - a list of floats printed by the block
    assert len(rewards) == 2 and all(0.0 <= r <= 1.0 for r in rewards)


def test_the_gpu_training_config_is_a_valid_steering_config(tmp_path):
    """The GPU block cannot run here, but its config must stay one the trainer accepts, with backbone options the
    LLM steerer takes."""
    import inspect

    from agents.steering.causal_lm import CausalLMSteerer
    from agents.steering.config import SteeringConfig

    toml = re.search(r"cat > steer-llm.toml <<'TOML'\n(.*?)\nTOML\n", README, re.S).group(1)
    (tmp_path / "steer-llm.toml").write_text(toml, encoding="utf-8")
    config = SteeringConfig.load(tmp_path / "steer-llm.toml")
    assert (config.backbone, config.device, config.mixed_precision) == ("causal_lm", "auto", "bf16")
    accepted = set(inspect.signature(CausalLMSteerer.__init__).parameters)
    assert set(config.backbone_args) <= accepted, set(config.backbone_args) - accepted
