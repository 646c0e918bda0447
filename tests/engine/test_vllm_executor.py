"""An LLM executor against the real vLLM server: completion mode, chat mode (continue_final_message), and the
model's hostile output (no tags, generation that never meets a stop string, bytes that are not UTF-8 alone)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401  (registers the envs)
from steer_envs.executors.chat import CompletionFormat, ServerChatFormat
from steer_envs.executors.protocol import INVALID_ACTION_REPLY
from steer_envs.failures import episode_failed

pytestmark = [pytest.mark.slow, pytest.mark.engine]


def _episode(spec: str, max_turns: int, seed: int = 0):
    env = gym.make("steer_envs/SearchSteering-v0", executor=spec, max_turns=max_turns, benchmarks=["nq"], split="dev")
    try:
        obs, info = env.reset(seed=seed)
        terminated = truncated = env.unwrapped.executor.done
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(0)
        return env.unwrapped.executor, info, terminated, truncated
    finally:
        env.close()


def test_completion_mode_episode_runs_to_its_turn_budget(vllm_server):
    executor, info, terminated, truncated = _episode(
        vllm_server.spec(max_new_tokens=24, chat_template="off", temperature=0), max_turns=3
    )
    assert not episode_failed(info) and "failure" not in info
    assert terminated and not truncated and info["executor_turns"] == 3
    assert info["tokens"] == sum(r.tokens for r in executor.history) > 0
    assert isinstance(executor.chat_format, CompletionFormat)
    assert executor.transcript == "".join(r.segment + r.observation for r in executor.history)


def test_chat_mode_continues_the_assistant_message(vllm_server):
    """``chat_template=on``: the prompt is the user message and the transcript the open assistant message, sent
    with ``continue_final_message``; a server that refused it would fail the second turn."""
    executor, info, terminated, truncated = _episode(
        vllm_server.spec(max_new_tokens=24, chat_template="on", temperature=0), max_turns=3
    )
    assert isinstance(executor.chat_format, ServerChatFormat)  # rendered by vLLM with the model's template
    assert not episode_failed(info) and info["executor_turns"] == 3 and info["tokens"] > 0


def test_hostile_model_output_is_an_outcome_not_a_crash(vllm_server):
    """A random model writes no action tags, never meets a stop string (every turn ends on its token budget) and
    emits byte tokens that decode to replacement characters: every turn is an invalid action, the episode ends on
    its turn budget with no answer and F1 0, and the transcript stays valid text."""
    executor, info, terminated, truncated = _episode(
        vllm_server.spec(max_new_tokens=48, chat_template="off", temperature=1.0), max_turns=4, seed=3
    )
    assert terminated and not episode_failed(info) and info["f1"] == 0.0 and executor.answer is None
    kinds = [r.kind for r in executor.history]
    assert kinds.count("invalid") >= 1 and set(kinds) <= {"invalid", "search", "answer"}
    invalid = [r for r in executor.history if r.kind == "invalid"]
    assert all(r.observation == INVALID_ACTION_REPLY for r in invalid)
    assert all(r.tokens == 48 for r in invalid)  # no stop string met: the token budget ended each turn
    written = "".join(r.segment for r in executor.history)
    assert "\ufffd" in written  # byte tokens that are not UTF-8 alone reach us as replacement characters
    executor.transcript.encode("utf-8")  # valid text, whatever bytes the model produced
