"""The hand-off feature set reads behaviour from the messages (never from simulator state), and the encoder
steerer built on it trains and round-trips through a checkpoint."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import torch

import steer_envs  # noqa: F401
from agents.steering.encoder import EncoderSteerer
from agents.steering.handoff_features import STAT_NAMES, HandoffFeaturizer, handoff_stats
from agents.steering.interventions import options_from_catalogue
from steer_envs.envs.catalogue import HANDOFF


def _line(i, sender, receiver, fields):
    return f"[{i}] {sender} -> {receiver}: {json.dumps(fields)}"


def test_over_rejection_and_ignored_evidence_are_visible():
    facts = {
        "facts": ["Paris is the capital of France."],
        "sources": ["Paris"],
        "confidence": "high",
        "queries": ["capital of France"],
    }
    reader = {"final_values": {"answer": "Paris"}}
    base = [
        _line(0, "planner", "searcher", {"subtasks": [{"objective": "capital of France"}]}),
        _line(1, "searcher", "reader", facts),
        _line(2, "reader", "verifier", reader),
    ]
    fail = base + [
        _line(3, "verifier", "searcher", {"verdict": "FAIL", "claim": "Paris", "supported": ["Paris (Paris)"]})
    ]
    stats = dict(zip(STAT_NAMES, handoff_stats("What is the capital of France?", "\n".join(fail), 4, 0)))
    assert stats["sender_verifier"] == 1 and stats["receiver_searcher"] == 1 and stats["fail_despite_support"] == 1
    summary = base + [
        _line(3, "verifier", "summarizer", {"verdict": "PASS", "claim": "Paris", "supported": ["Paris"]}),
        _line(4, "summarizer", "user", {"final_answer": "Lyon"}),
    ]
    stats = dict(zip(STAT_NAMES, handoff_stats("What is the capital of France?", "\n".join(summary), 5, 0)))
    assert stats["final_differs_from_claim"] == 1 and stats["fail_despite_support"] == 0


def test_features_of_real_observations_and_a_steerer_on_them():
    env = gym.make("steer_envs/HandoffSteering-v0", split="dev")
    observations = []
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            observations.append(obs)
            obs, _, done, _, _ = env.step(0)
    featurizer = HandoffFeaturizer(1 << 12)
    feats = featurizer(observations[0])
    assert feats.stats.shape == (len(STAT_NAMES),) and np.isfinite(feats.stats).all() and len(feats.ids)
    steerer = EncoderSteerer(options_from_catalogue(HANDOFF), hash_dim=1 << 12, features="handoff")
    z = steerer.fast_scores(observations)
    assert z.shape == (len(observations),)
    samples = steerer.sample_slow(observations[-1], 3, torch.Generator().manual_seed(0))
    assert all(s.option is not None and s.to_action("discrete") >= 1 for s in samples)
    assert "->" in samples[0].rationale and "verdict" in samples[0].rationale
    rebuilt = EncoderSteerer(steerer.options, **steerer.build_spec())
    rebuilt.load_state_dict(steerer.state_dict())
    assert torch.allclose(rebuilt.fast_scores(observations[:5]), steerer.fast_scores(observations[:5]))


def test_search_steerer_spec_is_unchanged():
    from steer_envs.envs.catalogue import STEERING

    assert "features" not in EncoderSteerer(options_from_catalogue(STEERING), hash_dim=1 << 10).build_spec()
