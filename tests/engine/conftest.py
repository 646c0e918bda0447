"""The real inference engine: vLLM (its CPU build here, installed under the cache on first use) serving a tiny random
model with a LoRA steerer adapter. Every test here talks to that real server; the engine's memory is reported beside
the suite's, outside its budget (tests/memory_budget.py).

The model is random, so its text is gibberish: that is what the hostile-output tests want (no tags, no stop string,
byte tokens that are not valid UTF-8 alone), and what the adapter check needs (any difference shows)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: the context the server enforces: a small model's, so overflows are reachable in a few turns
ENGINE_CONTEXT = 2048
ADAPTER_NAME = "steerer"
ADAPTER_RANK = 8


@pytest.fixture(scope="session")
def engine_model_dir(tmp_path_factory) -> Path:
    from steer_envs.llm.tiny import build_tiny_causal_lm

    # head size 64: vLLM's CPU attention refuses heads below 32
    return build_tiny_causal_lm(
        tmp_path_factory.mktemp("engine") / "tiny",
        hidden_size=128,
        heads=2,
        max_positions=ENGINE_CONTEXT,
        chat_template=True,
    )


def steering_options():
    from agents.steering.interventions import options_from_catalogue
    from steer_envs.envs.catalogue import STEERING

    return options_from_catalogue(STEERING)


@pytest.fixture(scope="session")
def adapter_dir(engine_model_dir, tmp_path_factory) -> Path:
    """A LoRA steerer's adapter folder as training writes it (``save_adapter``), its weights moved off peft's zero
    initialisation (an untouched adapter is the identity, which no comparison could tell from a missing one)."""
    from agents.steering.served_check import write_perturbed_adapter

    folder = tmp_path_factory.mktemp("adapter") / "adapter"
    return write_perturbed_adapter(steering_options(), engine_model_dir, folder, ADAPTER_RANK)


@pytest.fixture(scope="session")
def vllm_server(engine_model_dir, adapter_dir):
    from steer_envs.llm.vllm_engine import VLLMServeOptions, VLLMServer

    options = VLLMServeOptions(
        model=str(engine_model_dir),
        name="tiny",
        max_model_len=ENGINE_CONTEXT,
        adapters=((ADAPTER_NAME, str(adapter_dir)),),
        max_lora_rank=ADAPTER_RANK,
        device="cpu",
        eager=True,
    )
    with VLLMServer(options) as server:
        yield server
