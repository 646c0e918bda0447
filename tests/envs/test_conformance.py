"""Conformance of every registered simulated id, in the Minigrid pattern: check_env, determinism under a seed,
pickling, fork equivalence on random states, and vectorisation (sync and async; observations are strings, so
async needs ``shared_memory=False``)."""
from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import steer_envs  # noqa: F401
from steer_envs.envs import env_ids

#: the supervision envs (a frozen executor, a catalogue of interventions); GuidedSearch-v0 has its own conformance
#: tests in test_guided_search.py
ENV_IDS = [i for i in gym.registry if i.startswith("steer_envs/") and i in env_ids() and i != "steer_envs/GuidedSearch-v0"]
KW = {"split": "test", "max_turns": 8}
MODES = ("discrete", "text")


def make(env_id: str, mode: str = "discrete", **kw):
    return gym.make(env_id, action_mode=mode, **{**KW, **kw})


def sample_actions(env, n: int, seed: int) -> list:
    """Random actions; text mode mixes catalogue notes, 'pass' and arbitrary strings."""
    rng = np.random.default_rng(seed)
    cat = env.unwrapped.catalogue
    out = []
    for _ in range(n):
        i = int(rng.integers(len(cat)))
        if env.unwrapped.config.action_mode == "discrete":
            out.append(i)
        else:
            choice = rng.integers(3)
            out.append("pass" if choice == 0 else cat[i].template.replace("{", "").replace("}", "") if choice == 1
                       else "".join(rng.choice(list("abc xyz:!é"), size=int(rng.integers(1, 30)))))
    return out


def rollout(env, seed: int, actions: list, reset: bool = True, obs=None):
    """Step with ``actions`` until the episode ends; a list of (obs, reward, terminated, info-without-privileged)."""
    trace = []
    if reset:
        obs, _ = env.reset(seed=seed)
        trace.append(_freeze(obs, 0.0, False, {}))
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        trace.append(_freeze(obs, r, term, info))
        if term or trunc:
            break
    return trace


def _freeze(obs, reward, term, info):
    return (tuple((k, str(v)) for k, v in sorted(obs.items())), reward, term,
            tuple((k, repr(v)) for k, v in sorted(info.items())))


def test_every_id_is_registered():
    assert set(ENV_IDS) == {"steer_envs/SearchSteering-v0", "steer_envs/SearchPlanning-v0",
                            "steer_envs/SearchVerification-v0", "steer_envs/HandoffSteering-v0"}
    assert "steer_envs/GuidedSearch-v0" in gym.registry


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_check_env(env_id, mode):
    env = make(env_id, mode)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_determinism_under_a_seed(env_id, mode):
    a, b = make(env_id, mode), make(env_id, mode)
    for seed in (0, 1, 2):
        actions = sample_actions(a, 12, seed)
        assert rollout(a, seed, actions) == rollout(b, seed, actions)
    # different seeds give different episodes (the check is not vacuous)
    traces = {rollout(a, s, [0] * 12 if mode == "discrete" else ["pass"] * 12)[0] for s in range(5)}
    assert len(traces) > 1


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_round_trip_mid_episode(env_id):
    env = make(env_id)
    env.reset(seed=5)
    actions = sample_actions(env, 12, 5)
    if env_id.endswith("Steering-v0"):
        env.step(actions[0])
        actions = actions[1:]
    clone = pickle.loads(pickle.dumps(env))
    assert len(pickle.dumps(env)) < 2_000_000  # the index and corpus are not copied
    assert rollout(clone, 0, actions, reset=False) == rollout(env, 0, actions, reset=False)


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_fork_equivalence_on_random_states(env_id, mode):
    env = make(env_id, mode)
    rng = np.random.default_rng(0)
    checked = 0
    longest = 4 if env_id.endswith("Steering-v0") else 2  # planning decides once; verification once per answer
    for seed in range(8):
        env.reset(seed=seed)
        prefix = sample_actions(env, int(rng.integers(0, longest)), seed + 100)
        ended = rollout(env, seed, prefix, reset=False)
        if ended and ended[-1][2]:
            continue
        fork = env.unwrapped.fork()
        reference_state = pickle.dumps(env.unwrapped.get_state())
        suffix = sample_actions(env, 12, seed + 200)
        from_fork = rollout(fork, seed, suffix, reset=False)
        # the original did not see the fork's changes, and continues identically
        assert pickle.dumps(env.unwrapped.get_state()) == reference_state
        assert rollout(env.unwrapped, seed, suffix, reset=False) == from_fork
        checked += 1
    assert checked >= 2


def test_fork_with_seed_gives_independent_but_reproducible_continuations():
    env = make("steer_envs/SearchSteering-v0", benchmarks=["hotpotqa"])
    env.reset(seed=3)
    env.step(0)
    if env.unwrapped.executor.done:
        env.reset(seed=4)
    runs = {}
    for seed in range(8):
        fork = env.unwrapped.fork(seed=seed)
        runs[seed] = rollout(fork, 0, [4, 0, 0, 0, 0, 0, 0, 0, 0], reset=False)
        assert rollout(env.unwrapped.fork(seed=seed), 0, [4, 0, 0, 0, 0, 0, 0, 0, 0], reset=False) == runs[seed]
    assert len({str(r) for r in runs.values()}) > 1


def test_get_state_set_state_restores_an_episode():
    env = make("steer_envs/SearchSteering-v0")
    env.reset(seed=11)
    state = env.unwrapped.get_state()
    first = rollout(env, 0, [4, 0, 0, 0, 0, 0, 0, 0], reset=False)
    env.unwrapped.set_state(state)
    assert rollout(env, 0, [4, 0, 0, 0, 0, 0, 0, 0], reset=False) == first


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_vec_sync(env_id):
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **KW)
    obs, infos = envs.reset(seed=0)
    assert isinstance(obs["goal"][0], str) and obs["turn"].shape == (2,)
    for _ in range(3):
        obs, rewards, term, trunc, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert rewards.shape == (2,)
    envs.close()


@pytest.mark.slow
def test_make_vec_async_with_string_observations():
    env_id = "steer_envs/SearchSteering-v0"
    async_envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="async",
                              vector_kwargs={"shared_memory": False}, **KW)
    sync_envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **KW)
    a_obs, _ = async_envs.reset(seed=7)
    s_obs, _ = sync_envs.reset(seed=7)
    assert list(a_obs["transcript"]) == list(s_obs["transcript"])
    for step in range(4):
        actions = np.array([step % 9, 0], dtype=np.int64)
        a = async_envs.step(actions)
        s = sync_envs.step(actions)
        assert list(a[0]["transcript"]) == list(s[0]["transcript"])
        np.testing.assert_array_equal(a[1], s[1])
    async_envs.close()
    sync_envs.close()
