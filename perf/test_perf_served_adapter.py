"""The served LoRA adapter against the local peft model (pytest-benchmark; run through
``python -m perf.suite``): a ``CausalLMSteerer`` with a LoRA over a tiny random model, its adapter weights
moved off zero and saved by ``save_adapter``, served by vLLM (``--enable-lora --lora-modules``) while the local
side loads the same folder through peft. :func:`agents.steering.served_check.check_served_adapter` scores the token
ids the local steerer scores on decision states of the state bank; the figures are the largest differences.

Why a benchmark as well as a test (``tests/engine/test_vllm_steerer.py``): the differences are measurements, and
``BENCHMARKS.md`` prints them from the same run as every other figure. The base model served without the adapter
is scored too: it must miss by far more than the tolerance, or the check could not fail.

Run: ``python -m pytest perf/test_perf_served_adapter.py --benchmark-enable -q`` (vLLM's CPU build is
installed under ``$STEER_ENVS_CACHE`` on first use; the suite skips it instead unless run with ``--install``).
"""

from __future__ import annotations

import pytest

from perf.optional import require

pytestmark = [pytest.mark.slow, pytest.mark.engine]

#: decision states compared (each: the fast path's z, one slow-path sample, every scored token)
STATES = 50
#: states the base model is scored on, and how many tolerances it must miss by
BASE_STATES, BASE_MARGIN = 4, 100
ADAPTER, RANK = "steerer", 8
CONTEXT = 2048
#: head size 64: vLLM's CPU attention refuses heads below 32
MODEL = {"hidden_size": 128, "heads": 2, "context": CONTEXT, "dtype": "float32"}


def _options():
    from agents.steering.interventions import options_from_catalogue
    from steer_envs.envs.catalogue import STEERING

    return options_from_catalogue(STEERING)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The vLLM server with the adapter beside the base model, and the local steerer loading the same adapter."""
    require("vllm")
    from agents.steering.causal_lm import CausalLMSteerer
    from agents.steering.served_check import write_perturbed_adapter
    from steer_envs.llm.tiny import build_tiny_causal_lm
    from steer_envs.llm.vllm_engine import VLLMServeOptions, VLLMServer

    root = tmp_path_factory.mktemp("served-adapter")
    model = build_tiny_causal_lm(
        root / "tiny",
        hidden_size=MODEL["hidden_size"],
        heads=MODEL["heads"],
        max_positions=CONTEXT,
        chat_template=True,
    )
    adapter = write_perturbed_adapter(_options(), model, root / "adapter", RANK)
    options = VLLMServeOptions(
        model=str(model),
        name="tiny",
        max_model_len=CONTEXT,
        adapters=((ADAPTER, str(adapter)),),
        max_lora_rank=RANK,
        device="cpu",
        eager=True,
    )
    steerer = CausalLMSteerer(
        _options(), model=str(model), adapter=str(adapter), max_prompt_tokens=1024, max_think_tokens=8
    )
    with VLLMServer(options) as server:
        yield server, steerer


def _check(steerer, spec: str, states: list, **kwargs):
    from agents.steering.served_check import check_served_adapter
    from steer_envs.llm.registry import make_backend

    backend = make_backend(spec, shared=False)
    try:
        return check_served_adapter(steerer, backend, states, **kwargs)
    finally:
        backend.close()


def test_served_adapter_equals_the_local_peft_model(benchmark, served):
    from agents.steering.served_check import decision_states

    server, steerer = served
    states = decision_states(STATES)
    check = benchmark.pedantic(
        _check, args=(steerer, server.spec(ADAPTER), states), kwargs={"slow_samples": 1, "seed": 0}, rounds=1
    )
    base = _check(steerer, server.spec(), states[:BASE_STATES])
    benchmark.extra_info.update(
        {
            "check": check.as_dict(),
            "base_check": base.as_dict(),
            "base_margin": BASE_MARGIN,
            "adapter_rank": RANK,
            "model": MODEL,
            "vllm_version": server.version(),
        }
    )
    assert check.states == STATES and check.slow_samples == STATES and check.slow_tokens > 1000
    assert check.ok, check.as_dict()
    assert not base.ok and base.fast_max_abs_diff > BASE_MARGIN * base.tolerance
