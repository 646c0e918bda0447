"""An episode of HandoffSteering-v0 with an LLM-backed role: the real packaged Gemma 3 270M plays the verifier."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

import steer_envs  # noqa: F401
from steer_envs.executors.pipeline import FAIL, PASS

pytestmark = [pytest.mark.slow, pytest.mark.llm]


def test_episode_with_a_gemma_verifier():
    torch.set_num_threads(1)
    env = gym.make("steer_envs/HandoffSteering-v0", split="dev", roles={"verifier": "hf:gemma-3-270m"}, max_turns=8)
    pipeline = env.unwrapped.pipeline
    assert not pipeline.deterministic
    obs, info = env.reset(seed=0)
    done, steps = False, 0
    while not done:
        action = 0 if steps != 1 else 7  # one note (note_verify) to the reader, pass otherwise
        obs, reward, done, truncated, info = env.step(action)
        steps += 1
    verdicts = [h for h in pipeline.handoffs if h.sender == "verifier"]
    assert verdicts and info["turns_by_role"]["verifier"] == len(verdicts)
    for h in verdicts:
        assert h.fields["verdict"] in (PASS, FAIL)  # whatever the model wrote, it reads as a verdict
        assert h.receiver == "summarizer" if h.fields["verdict"] == PASS else h.receiver in ("searcher", "summarizer")
    assert info["agent_turns"] <= 8 and pipeline.handoffs[-1].sender == "summarizer"
    assert 0.0 <= info["f1"] <= 1.0
