"""The README's real-engine block runs as written: install, serve the packaged Gemma 3 270M with vLLM, evaluate
the zero-shot served steerer beside no supervision, stop the server. Only the run folder moves under the test's
temporary folder (tests write nowhere else)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.test_readme import README, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.llm]


def engine_block() -> str:
    section = README.split("## A real inference engine", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_the_readme_engine_block_runs_as_written(tmp_path):
    block = engine_block()
    assert "steer-envs vllm serve gemma-3-270m" in block and "steer-envs vllm stop" in block
    out = tmp_path / "zs-vllm"
    script = block.replace("runs/zs-vllm", str(out))
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=2400,
    )
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "stopped gemma-3-270m at http://127.0.0.1:8011/v1" in proc.stdout
    methods = [m["method"] for m in json.loads((out / "metrics.json").read_text())["methods"]]
    assert any(m.startswith("steering_zero_shot:") for m in methods) and "no_supervision" in methods
    [log] = (out / "checkpoints").glob("*/decisions.jsonl")
    assert sum('"fast"' in line for line in Path(log).read_text().splitlines()) >= 2
    assert subprocess.run(["pgrep", "-f", "vllm.entrypoints.openai.api_server.*--port 8011"]).returncode == 1
