"""The GPU check's ``vllm`` section cannot rot on machines without a GPU: ``--smoke --only vllm`` serves the tiny
model and a LoRA steerer adapter through vLLM's CPU build and runs the same code the GPU plan runs (the eval path
at 16 episodes in flight, one scored request through the adapter, the served-vs-peft check)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perf.gpu_check import VLLM_MAX_TURNS, CheckPlan, markdown

pytestmark = [pytest.mark.slow, pytest.mark.engine]


def test_smoke_vllm_section_serves_the_eval_path_and_the_adapter(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "perf.gpu_check", "--smoke", "--out", str(tmp_path), "--only", "vllm"],
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    plan = CheckPlan.smoke()
    vllm = results["vllm"]
    assert "error" not in vllm, vllm
    served = vllm["eval"]
    assert served["episodes_in_flight"] == plan.vllm_in_flight and served["episodes"] == plan.vllm_episodes
    assert served["requests"] == plan.vllm_episodes * VLLM_MAX_TURNS  # a random model never answers
    assert served["completion_tokens_per_s"] > 0 and served["episodes_per_min"] > 0
    assert 0 < served["completion_tokens"] <= served["requests"] * plan.vllm_max_new_tokens
    adapter = vllm["adapter"]
    assert adapter["scored_logprob"] <= 0 and adapter["check"]["ok"]
    assert adapter["check"]["states"] == plan.vllm_adapter_states
    assert (tmp_path / "gpu_check.md").read_text() == markdown(results)
