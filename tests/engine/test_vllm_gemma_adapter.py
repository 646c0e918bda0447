"""The eval path's z on a *trained* Gemma 3 270M LoRA steerer served by vLLM equals the local peft steerer's.

The adapter (``tests/fixtures/gemma_steerer_adapter``, its README says how it was made) is the one the steering
trainer wrote in the LLM headline's run, its weights stored in half precision: training it here would take the
suite far past its memory budget. Its LoRA weights are off their zero start, which the test checks first. The
served steerer is the one ``steering_zero_shot:model=openai:...`` builds in an eval, reading z in the server's
tokens from prompts fitted to the headline's token budget, on bank states whose transcripts outgrow it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from .conftest import steering_options

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.llm]
BANK_STATES = 50
TOLERANCE = 1e-3
ADAPTER = "steerer"
ADAPTER_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "gemma_steerer_adapter"
#: the LLM headline's steerer budget (``benchmarks.llm_headline``: prompt_chars 900 -> 300 tokens, think_tokens 24)
PROMPT_TOKENS, THINK_TOKENS = 300, 24


@pytest.fixture(scope="module")
def gemma_dir():
    from steer_envs.llm.packaged import packaged_model_dir

    return packaged_model_dir("gemma-3-270m")


@pytest.fixture(scope="module")
def trained_adapter():
    from safetensors.torch import load_file

    weights = load_file(str(ADAPTER_DIR / "adapter_model.safetensors"))
    moved = max(float(w.abs().max()) for name, w in weights.items() if "lora_B" in name)
    assert moved > 0, "the adapter is at its zero start: no comparison could tell it from the base"
    return ADAPTER_DIR


@pytest.fixture(scope="module")
def gemma_server(gemma_dir, trained_adapter):
    from steer_envs.llm.vllm_engine import VLLMServeOptions, VLLMServer

    options = VLLMServeOptions(
        model=str(gemma_dir),
        name="gemma",
        max_model_len=4096,
        adapters=((ADAPTER, str(trained_adapter)),),
        max_lora_rank=8,
        device="cpu",
        eager=True,
    )
    with VLLMServer(options) as server:
        yield server


def test_the_eval_paths_z_on_a_trained_gemma_adapter_equals_the_local_peft_steerers(
    gemma_dir, trained_adapter, gemma_server
):
    from agents.steering.causal_lm import CausalLMSteerer
    from agents.steering.served import ServedSteerer
    from agents.steering.served_check import decision_states
    from benchmarks.llm_headline import HeadlineConfig, prompt_tokens

    assert (prompt_tokens(HeadlineConfig(out="")), HeadlineConfig(out="").think_tokens) == (PROMPT_TOKENS, THINK_TOKENS)
    budget = {"max_prompt_tokens": PROMPT_TOKENS, "max_think_tokens": THINK_TOKENS}
    states = decision_states(BANK_STATES, seed=3)
    local = CausalLMSteerer(steering_options(), model=str(gemma_dir), adapter=str(trained_adapter), **budget)
    with torch.no_grad():
        expected = local.fast_scores(states).float()
    served = ServedSteerer(steering_options(), gemma_server.spec(ADAPTER, concurrency=32), **budget)
    got = served.fast_scores(states)
    diff = (got - expected).abs().max().item()
    print(f"trained Gemma adapter, eval path vs peft over {len(states)} states: max |z served - z local| = {diff:.2e}")
    assert served.stats.fit_by_tokens == 1 and served.stats.fast_candidate_missing == 0
    assert served.context_stats.elided_prompts >= 5  # long states: fitted, not only short ones
    assert diff <= TOLERANCE, diff
    # the comparison can fail: the base model served without the adapter scores these states otherwise
    base = ServedSteerer(steering_options(), gemma_server.spec(concurrency=32), **budget).fast_scores(states)
    assert (base - expected).abs().max().item() > 100 * TOLERANCE
