"""Context limits and a dying server, against the real vLLM server (a 2,048-token model): an executor that talks
past its context is a scored truncation; a steerer's prompt is fitted, so an evaluation with long transcripts
finishes; a server killed mid-episode is a service failure, left out of the means."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
import torch

import steer_envs  # noqa: F401  (registers the envs)
from steer_envs.failures import CONTEXT_TRUNCATION, episode_failed
from tests.agents.support import eval_in_subprocess

from .conftest import ENGINE_CONTEXT, steering_options

pytestmark = [pytest.mark.slow, pytest.mark.engine]


def test_executor_overflow_is_a_scored_truncation(vllm_server):
    env = gym.make(
        "steer_envs/SearchSteering-v0",
        executor=vllm_server.spec(max_new_tokens=300, chat_template="off"),
        max_turns=20,
        benchmarks=["nq"],
        split="dev",
    )
    try:
        obs, info = env.reset(seed=0)
        executor = env.unwrapped.executor
        assert executor.backend.context_length == ENGINE_CONTEXT  # read off the server's GET /v1/models
        terminated = truncated = False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(0)
    finally:
        env.close()
    assert truncated and not terminated and info["truncation"] == CONTEXT_TRUNCATION
    assert not episode_failed(info) and "failure" not in info and info["f1"] == 0.0 and executor.answer is None
    assert info["executor_turns"] < 20


@pytest.mark.parametrize("fit", ["tokens", "chars"])
def test_steerer_prompts_fit_a_2048_token_model(vllm_server, fit):
    """In the server's tokens the prompt budget is the context less the reasoning and the grammar (no refit
    needed); by characters it is an estimate the server's refusals correct."""
    from agents.steering.causal_lm import FAST_QUESTION
    from agents.steering.served import ServedSteerer
    from tests.agents.test_steerer_context import MARKER, long_observation

    steerer = ServedSteerer(
        steering_options(),
        vllm_server.spec(),
        fit=fit,
        max_prompt_tokens=10**5,
        max_prompt_chars=10**6,
        max_think_tokens=8,
        max_line_tokens=6,
    )
    observation = long_observation(40)  # far beyond 2,048 tokens of the tiny tokenizer
    z = steerer.fast_scores([observation, observation])
    assert bool(torch.isfinite(z).all()) and steerer.context_stats.fallbacks == 0
    assert steerer.context_stats.elided_turns > 0 and MARKER in steerer.prompt_text(observation, FAST_QUESTION)
    [sample] = steerer.sample_slow(observation, 1, torch.Generator().manual_seed(0))
    assert "Intervention: " in sample.payload["output"] and steerer.context_stats.fallbacks == 0
    assert steerer.stats.fit_by_tokens == (fit == "tokens")
    if fit == "tokens":  # fitted to the very token: no refusal to correct
        assert steerer.context_stats.refits == 0 and steerer.token_budget == ENGINE_CONTEXT - 8 - 64


def test_eval_with_long_transcripts_does_not_abort_on_the_steerers_context(vllm_server, tmp_path):
    out = tmp_path / "run"
    spec = f"steering_zero_shot:model={vllm_server.spec()},tau=0.02,think_tokens=8"  # the default prompt size
    proc = eval_in_subprocess(out, [spec], benchmark="hotpotqa", limit=2, max_turns=10, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [log] = (out / "checkpoints").glob("*/decisions.jsonl")
    fast = [json.loads(line) for line in log.read_text().splitlines() if '"fast"' in line]
    assert len(fast) >= 4


def test_server_killed_mid_episode_is_a_failure_not_an_outcome(engine_model_dir, tmp_path):
    from steer_envs.llm.vllm_engine import VLLMServeOptions, VLLMServer

    options = VLLMServeOptions(
        model=str(engine_model_dir),
        name="doomed",
        max_model_len=ENGINE_CONTEXT,
        device="cpu",
        eager=True,
        log_path=str(tmp_path / "doomed.log"),
    )
    with VLLMServer(options) as server:
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            executor=server.spec(max_new_tokens=16, chat_template="off", max_retries=1, backoff=0.1, timeout=20),
            max_turns=6,
            benchmarks=["nq"],
            split="dev",
        )
        obs, info = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(0)
        assert not episode_failed(info) and not (terminated or truncated)
        server.kill()
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(0)
        env.close()
    assert truncated and not terminated and reward == 0.0 and episode_failed(info)
    assert info["failure_source"] == "backend" and "truncation" not in info
