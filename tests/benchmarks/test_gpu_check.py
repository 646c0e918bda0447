"""``python -m perf.gpu_check`` cannot rot on machines without a GPU: its ``--smoke`` plan runs every section
(LLM steerer + its trainer, ACTGUIDE-RL with the causal-LM learner, the concurrent vector env) on CPU at toy sizes
through the same code the GPU plan runs. The ``vllm`` section needs vLLM's CPU build: its smoke run is
tests/engine/test_gpu_check_vllm.py (marked ``engine``), so this one leaves it out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perf.gpu_check import CheckPlan, main, markdown


@pytest.mark.slow
def test_smoke_plan_runs_every_section_and_writes_its_figures(tmp_path):
    command = [sys.executable, "-m", "perf.gpu_check", "--smoke", "--out", str(tmp_path), "--skip", "vllm"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    assert results["command"].startswith("python -m perf.gpu_check --smoke") and results["commit"]
    plan = CheckPlan.smoke()
    for name in (*(f"steerer_{s}" for s in plan.steerer_shapes), "actguide", "vector"):
        assert "error" not in results[name], results[name]
    steerer = results["steerer_smoke"]
    assert steerer["fast_path_observations_per_s"] > 0 and steerer["slow_path_generated_tokens_per_s"] > 0
    assert steerer["fast_path_one_at_a_time_observations_per_s"] > 0 and steerer["fast_path_batching_speedup"] > 0
    assert steerer["training"]["rounds"] == plan.steering_rounds and steerer["training"]["iterations_per_min"] > 0
    assert results["actguide"]["iterations"] >= 1 and results["actguide"]["rollouts"] >= plan.actguide_group
    vector = results["vector"]
    assert vector["episodes_in_flight"] == plan.vector_envs
    for share in ("share_of_ceiling", "concurrent_vec_share_of_ceiling"):  # the async env, the concurrent one
        assert 0 < vector[share] <= 1.05  # the server cannot answer faster than its latency allows
    assert (tmp_path / "gpu_check.md").read_text() == markdown(results)


def test_without_a_gpu_the_gpu_plan_refuses_with_the_way_out(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the GPU plan would run")
    assert main(["--out", "unused"]) == 2
    assert "--smoke" in capsys.readouterr().err
