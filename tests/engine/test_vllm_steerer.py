"""The steerer against the real vLLM server: a LoRA steerer served with its adapter equals the local peft model,
and ``steer-envs eval`` runs the zero-shot served steerer end to end."""

from __future__ import annotations

import json
import math

import pytest

from tests.agents.support import eval_in_subprocess

from .conftest import ADAPTER_NAME, steering_options

pytestmark = [pytest.mark.slow, pytest.mark.engine]
BANK_STATES = 50


@pytest.fixture(scope="module")
def adapter_steerer(engine_model_dir, adapter_dir):
    from agents.steering.causal_lm import CausalLMSteerer

    return CausalLMSteerer(
        steering_options(),
        model=str(engine_model_dir),
        adapter=str(adapter_dir),
        max_think_tokens=8,
    )


def test_served_adapter_equals_the_local_peft_model(vllm_server, adapter_steerer):
    from agents.steering.served_check import check_served_adapter, decision_states
    from steer_envs.llm.registry import make_backend

    states = decision_states(BANK_STATES)
    served = make_backend(vllm_server.spec(ADAPTER_NAME, concurrency=32), shared=False)
    check = check_served_adapter(adapter_steerer, served, states, slow_samples=1, seed=0)
    assert check.states == BANK_STATES and check.slow_samples == BANK_STATES and check.slow_tokens > 1000
    assert check.ok, check.as_dict()
    print("served adapter vs peft:", json.dumps(check.as_dict()))
    # the check can fail: the base model served without the adapter is another policy
    base = check_served_adapter(adapter_steerer, make_backend(vllm_server.spec(), shared=False), states[:4])
    assert not base.ok and base.fast_max_abs_diff > 100 * base.tolerance


def test_eval_runs_the_zero_shot_served_steerer(vllm_server, tmp_path):
    from benchmarks.harness.runfolder import label_filename

    out = tmp_path / "run"
    spec = f"steering_zero_shot:model={vllm_server.spec()},tau=0.02,prompt_chars=1500,think_tokens=8"
    proc = eval_in_subprocess(out, [spec, "no_supervision"], benchmark="nq", limit=3, max_turns=3, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    methods = json.loads((out / "methods.json").read_text())
    label = next(name for name in methods if name.startswith("steering_zero_shot:"))
    assert methods[label]["backbone"] == "served" and methods[label]["trained"] is False
    episodes = [
        json.loads(line) for line in (out / "episodes" / f"{label_filename(label)}.jsonl").read_text().splitlines()
    ]
    assert len(episodes) == 3 and all(e["failure"] is None and e["decisions"] >= 1 for e in episodes)
    [log] = (out / "checkpoints").glob("*/decisions.jsonl")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    fast = [r for r in rows if r["path"] == "fast"]
    assert len(fast) == sum(e["decisions"] for e in episodes) and all(math.isfinite(r["z"]) for r in fast)
