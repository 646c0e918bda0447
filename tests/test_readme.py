"""The README's promises: the two set-up commands match CI, and its examples run as a reader runs them (each
Python block saved as a file and run with ``python FILE`` in a fresh process) and print what the text says. The
command reference it links to (``docs/cli.md``) lists every command with its memory and disk."""

import ast
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.blocks import block_after, run_script, script_env

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI_DOC = ROOT / "docs" / "cli.md"


def test_readme_is_a_front_page_of_about_200_lines_with_the_headline_near_the_top():
    lines = README.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move reference material to docs/"
    assert lines.index("## Headline: the papers' claims and the suite's figures") < 40


def test_readme_opens_with_the_two_commands_and_ci_runs_the_same_tests():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith("steer-envs demo")
    install, test = commands[1].split(" && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert install.replace("pip install", "pip install -q") in ci
    assert test in ci


def test_ten_line_example_runs_and_visibly_steers(tmp_path):
    """Saved as a file and run: the two printed lines are what the sentence under the block says they are."""
    example = block_after(README, "## Ten lines of Python")
    assert len([line for line in example.strip().splitlines() if line.strip()]) <= 11
    out = run_script(example, tmp_path).stdout.splitlines()
    rows = [dict(re.findall(r"(\w+)=([\d.]+)", line)) | {"answer": line.split("answer=", 1)[1]} for line in out]
    assert len(rows) == 2
    assert rows[0]["interventions"] == "0" and rows[1]["interventions"] == "1"  # the note was sent once
    assert (rows[0]["f1"], rows[1]["f1"]) == ("0.00", "1.00")  # "(f1=0.00)" ... "(f1=1.00)" in the README
    assert rows[0]["answer"] != rows[1]["answer"]  # and the printed answers show what changed
    assert "(f1=0.00)" in README and "(f1=1.00)" in README


def test_sb3_quick_start_runs_as_written(tmp_path):
    import steer_envs.envs.catalogue as catalogue

    example = block_after(README, "## Stable-Baselines3")
    decision = run_script(example, tmp_path).stdout.strip().removeprefix("first decision: ")
    assert decision in [t.name for t in catalogue.STEERING]


def test_every_command_is_in_the_command_table_with_its_memory_and_disk():
    from steer_envs.cli.main import build_parser
    from steer_envs.cli.registry import COMMANDS

    build_parser()  # loads the commands of agents / benchmarks too
    assert "(docs/cli.md)" in README  # the README links the reference
    reference = CLI_DOC.read_text(encoding="utf-8")
    table = reference.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    memory = reference.split("\n## Memory and disk\n", 1)[1].split("\n## ", 1)[0]
    for name in COMMANDS:
        assert f"`steer-envs {name}" in table, f"steer-envs {name} is missing from docs/cli.md's command table"
        assert f"| `{name}" in memory, f"steer-envs {name} is missing from docs/cli.md's memory and disk table"
    assert "python -m pytest" in memory


def _cli(command: str) -> list[str]:
    """A README command line as this interpreter runs it (``steer-envs`` -> ``python -m steer_envs``)."""
    words = shlex.split(command)
    assert words[0] == "steer-envs", command
    return [sys.executable, "-m", "steer_envs", *words[1:]]


@pytest.mark.slow
def test_trl_quick_start_runs_as_written(tmp_path):
    """The README's TRL commands in a fresh folder, offline: the bash line writes the tiny tool-calling model (a
    copy of the build the TRL tests cache), the Python block, saved as a file, trains two GRPO steps on it."""
    pytest.importorskip("trl")
    from tests.integrations.test_trl import tool_model_and_data

    tool_model_and_data()  # the cached build the command copies (shared with the TRL tests)
    heading = "## Training with TRL, serving with OpenEnv"
    (command,) = [line for line in block_after(README, heading, "bash").splitlines() if line.strip()]
    build = subprocess.run(_cli(command), cwd=tmp_path, env=script_env(), capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    assert "wrote a tiny tool-calling model" in build.stdout
    out = run_script(block_after(README, heading), tmp_path, TRL_EXPERIMENTAL_SILENCE="1", HF_HUB_OFFLINE="1")
    line = [x for x in out.stdout.splitlines() if x.startswith("rewards:")][-1]
    rewards = ast.literal_eval(line.removeprefix("rewards:").strip())
    assert len(rewards) == 2 and all(0.0 <= r <= 1.0 for r in rewards)


@pytest.mark.slow
def test_serve_env_block_runs_as_pasted(tmp_path):
    """The serve-env session of docs/training_trl_openenv.md run whole by bash, as a user pastes it (another port;
    ``steer-envs`` as this interpreter's module): it waits for the server, searches and answers the question its
    reset drew, prints the reward it promises and stops the server it started."""
    pytest.importorskip("openenv")
    from steer_envs.llm.vllm_engine import free_port

    doc = (ROOT / "docs" / "training_trl_openenv.md").read_text(encoding="utf-8")
    block = block_after(doc, "## OpenEnv: `steer-envs serve-env ENV_ID`", "bash", index=1)
    assert "1.0 True" in block and block.rstrip().endswith("kill $!  # stop the server")
    script = block.replace("8001", str(free_port())).replace(
        "steer-envs ", f"{shlex.quote(sys.executable)} -m steer_envs "
    )
    script = script.replace("python -c", f"{shlex.quote(sys.executable)} -c")
    shell = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=script_env(),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = shell.communicate(timeout=600)  # returns once the block's last line stopped its server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
    assert shell.returncode == 0, err[-3000:]
    assert out.split()[-2:] == ["1.0", "True"], (out[-2000:], err[-3000:])


def test_the_gpu_training_config_is_a_valid_steering_config(tmp_path):
    """The GPU block cannot run here, but its config must stay one the trainer accepts, with backbone options the
    LLM steerer takes."""
    import inspect

    from agents.steering.causal_lm import CausalLMSteerer
    from agents.steering.config import SteeringConfig

    assert "--config docs/configs/steer-llm.toml" in block_after(README, "## On a GPU node", "bash")
    config = SteeringConfig.load(ROOT / "docs" / "configs" / "steer-llm.toml")
    assert (config.backbone, config.device, config.mixed_precision) == ("causal_lm", "auto", "bf16")
    accepted = set(inspect.signature(CausalLMSteerer.__init__).parameters)
    assert set(config.backbone_args) <= accepted, set(config.backbone_args) - accepted
