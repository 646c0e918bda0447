"""Wrappers on the real SearchSteering-v0 (simulated executor, real data, real BM25)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest

import steer_envs  # noqa: F401
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.protocol import render_information, render_search
from steer_envs.retrieval.base import Hit
from steer_envs.wrappers import EpisodeRecorder, FeatureObservation, InterventionCost, TextFeaturizer
from steer_envs.wrappers.features import COUNTER_NAMES

ENV_ID = "steer_envs/SearchSteering-v0"


def _env(**kwargs):
    return gymnasium.make(ENV_ID, split="dev", benchmarks=["nq", "hotpotqa"], **kwargs)


def test_feature_wrapper_passes_sb3_check_env():
    from stable_baselines3.common.env_checker import check_env

    env = FeatureObservation(_env(action_mode="discrete"), buckets=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any SB3 warning about the spaces fails the test
        check_env(env, warn=True, skip_render_check=True)
    assert env.observation_space.shape == (3 * 64 + len(COUNTER_NAMES),)
    assert isinstance(env.action_space, gymnasium.spaces.Discrete)
    obs, _ = env.reset(seed=3)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)


def test_feature_wrapper_refuses_text_actions():
    with pytest.raises(SteerEnvsError, match="action_mode='discrete'"):
        FeatureObservation(_env(action_mode="text"))


def _transcript(queries):
    hit = Hit("p1", "Some Film", "Some Film is a 1999 film directed by Jane Doe.", 1.0)
    return "".join(render_search(q) + render_information([hit]) for q in queries)


def test_counters_see_repeated_queries_and_are_stable_across_processes():
    feat = TextFeaturizer(buckets=32, max_turns=10)
    names = list(COUNTER_NAMES)
    fresh = feat.counters("Who directed Some Film?", _transcript(["some film director", "jane doe"]), 2, 0)
    loop = feat.counters("Who directed Some Film?", _transcript(["some film director", "director some film"]), 2, 0)
    assert fresh[names.index("repeated_queries")] == 0 and fresh[names.index("last_query_repeated")] == 0
    assert loop[names.index("repeated_queries")] == pytest.approx(0.1)
    assert loop[names.index("last_query_repeated")] == 1.0
    assert loop[names.index("goal_words_in_information")] > 0.5
    vector = feat("Who directed Some Film?", _transcript(["some film director"]), 1, 0)
    code = (
        "from steer_envs.wrappers import TextFeaturizer;"
        "from tests.wrappers.test_wrappers import _transcript;"
        "print(TextFeaturizer(32, 10)('Who directed Some Film?', _transcript(['some film director']), 1, 0).tolist())"
    )
    other = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    np.testing.assert_array_equal(vector, np.asarray(other, dtype=np.float32))  # CRC32, not the salted hash()


def _rollout(env, actions, seed):
    env.reset(seed=seed)
    total, info = 0.0, {}
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            break
    else:
        while not (terminated or truncated):
            _, reward, terminated, truncated, info = env.step(0)
            total += reward
    return total, info


def test_intervention_cost_wrapper_matches_the_env_cost():
    actions = [2, 0, 5]
    for seed in range(4):
        wrapped, info_w = _rollout(InterventionCost(_env(), cost=0.1), actions, seed)
        native, info_n = _rollout(_env(intervention_cost=0.1), actions, seed)
        plain, _ = _rollout(_env(), actions, seed)
        assert info_w["interventions"] >= 1
        assert wrapped == pytest.approx(native)
        assert wrapped == pytest.approx(plain - 0.1 * info_w["interventions"])
    with pytest.raises(SteerEnvsError):
        InterventionCost(_env(), cost=-1)


def test_episode_recorder_writes_one_line_per_finished_episode(tmp_path):
    path = tmp_path / "episodes.jsonl"
    env = EpisodeRecorder(_env(), path)
    returns = [_rollout(env, [0, 3], seed)[0] for seed in range(3)]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 3 and env.episodes_written == 3
    for row, ret, seed in zip(rows, returns, range(3)):
        assert row["seed"] == seed and row["return"] == pytest.approx(ret)
        assert row["steps"][0]["action"] == 0 and "goal" in row["steps"][0]["observation"]
        assert row["steps"][-1]["reward"] == pytest.approx(row["info"]["f1"])  # terminal reward = F1, no cost
        assert {"f1", "executor_turns", "interventions", "task_id"} <= set(row["info"])
    env.reset(seed=9)
    env.step(0)  # an unfinished episode is not written
    assert len(path.read_text().splitlines()) == 3
