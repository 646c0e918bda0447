"""The steerer against the real vLLM server: a LoRA steerer served with its adapter equals the local peft model,
and ``steer-envs eval`` runs the zero-shot served steerer end to end."""

from __future__ import annotations

import json
import math

import pytest
import torch

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


def test_the_eval_paths_z_equals_the_local_peft_steerers(vllm_server, adapter_steerer):
    """The served steerer an eval runs (``steering_zero_shot:model=openai:...``), not a check beside it: its fast
    path's z on the served adapter against the local peft steerer's, on bank states whose transcripts outgrow the
    prompt budget (fitted, turns elided, in the server's tokens as in the local tokenizer's)."""
    from agents.steering.served import ServedSteerer
    from agents.steering.served_check import decision_states

    states = decision_states(BANK_STATES, seed=3)
    served = ServedSteerer(
        steering_options(),
        vllm_server.spec(ADAPTER_NAME, concurrency=32),
        max_prompt_tokens=adapter_steerer.max_prompt_tokens,
        max_think_tokens=adapter_steerer.max_think_tokens,
    )
    with torch.no_grad():
        local = adapter_steerer.fast_scores(states).float()
    got = served.fast_scores(states)
    diff = (got - local).abs().max().item()
    print(f"eval path vs peft over {len(states)} states: max |z served - z local| = {diff:.2e}")
    assert served.stats.fit_by_tokens == 1 and served.stats.fast_candidate_missing == 0
    assert served.context_stats.elided_prompts >= 5  # long states: fitted, not just short ones
    assert diff <= 1e-3, diff
    assert local.std().item() > 10 * 1e-3  # the states give different z: equality is not a constant


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
    assert all(r["fit"] == "tokens" and r["missing"] == [] for r in fast)  # vLLM tokenises: the local steerer's z
