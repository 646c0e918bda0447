"""ReferencePlanHint: a per-episode reference plan on GuidedSearch-v0 for any learner, Stable-Baselines3 included."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import FilterObservation, FlattenObservation

import steer_envs  # noqa: F401
from steer_envs.errors import SteerEnvsError
from steer_envs.reference_plans import HINT_HEADER
from steer_envs.wrappers import ReferencePlanHint

KW = {"split": "train", "benchmarks": ["musique"]}


def test_full_fixed_and_scheduled_guidance():
    env = ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", **KW), k="full")
    obs, info = env.reset(seed=0)
    assert info["plan_k"] == info["reference_length"] > 0 and HINT_HEADER in obs["prompt"]
    assert HINT_HEADER not in info["unguided_observation"]["prompt"]
    env = ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", **KW), k=1)
    assert env.reset(seed=0)[1]["plan_k"] == 1
    seen = []
    env = ReferencePlanHint(
        gym.make("steer_envs/GuidedSearch-v0", **KW),
        k=lambda task, length, episode: seen.append(episode) or min(length, episode),
    )
    ks = [env.reset(seed=s)[1]["plan_k"] for s in range(3)]
    assert seen == [0, 1, 2] and ks == [0, 1, 2]  # every MuSiQue reference has >= 3 actions
    env = ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", **KW), k="full", mode="prefix")
    obs, info = env.reset(seed=0)
    assert info["plan_mode"] == "prefix" and "<search>" in obs["transcript"]


def test_probability_of_guiding_is_seeded():
    def draws(seed):
        env = ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", **KW), k="full", p=0.5)
        env.reset(seed=seed)
        return [env.reset()[1]["plan_k"] > 0 for _ in range(40)]

    a = draws(3)
    assert a == draws(3) and 5 < sum(a) < 35


def test_bad_arguments():
    with pytest.raises(SteerEnvsError, match="GuidedSearch"):
        ReferencePlanHint(gym.make("steer_envs/SearchSteering-v0", split="dev"))
    base = gym.make("steer_envs/GuidedSearch-v0", **KW)
    with pytest.raises(SteerEnvsError, match="k must be"):
        ReferencePlanHint(base, k=-1)
    with pytest.raises(SteerEnvsError, match="probability"):
        ReferencePlanHint(base, p=2.0)


@pytest.mark.slow
def test_sb3_ppo_trains_with_guidance():
    """Stable-Baselines3 PPO runs on the guided env through standard Gymnasium wrappers (features + mask as a Box)."""
    import os
    import tempfile

    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    env = ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", split="train", benchmarks=["nq"]), k="full", p=0.5)
    env = FlattenObservation(FilterObservation(env, ["features", "action_mask"]))
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    before = set(os.listdir(tempfile.gettempdir()))
    model.learn(total_timesteps=128)
    assert model.num_timesteps >= 128
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(np.int64(action))
    assert not {p for p in set(os.listdir(tempfile.gettempdir())) - before if p.startswith("SB3-")}
