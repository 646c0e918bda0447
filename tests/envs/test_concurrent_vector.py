"""The concurrent vector env (steer_envs.vector): the same results as SyncVectorEnv for the same seeds (the
deterministic simulator, several steps through autoresets), gymnasium.make_vec wiring (its default stays
SyncVectorEnv), clean close; and over real HTTP against a loopback server with latency: bounded requests in flight,
reused connections."""

from __future__ import annotations

import dataclasses
import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import steer_envs
from steer_envs.envs.registration import env_ids
from steer_envs.errors import SteerEnvsError
from steer_envs.vector import ConcurrentVectorEnv, VectorEntryPoint, make_concurrent_vec
from tests.servers.latency_server import LatencyServer

ENV_ID = "steer_envs/SearchSteering-v0"
KW = {"split": "test", "max_turns": 3, "executor": "sim:default"}


def _same(a, b) -> None:
    """Recursive equality of batched observations / infos (dicts of numpy arrays, object arrays of dicts)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
        if a.dtype == object:
            for x, y in zip(a.ravel(), b.ravel()):
                _same(x, y)
        else:
            np.testing.assert_array_equal(a, b)
    else:
        assert a == b or (a != a and b != b)  # NaN equals NaN here


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_results_equal_sync_vector_env_through_autoresets(mode):
    n = 4
    sync = SyncVectorEnv([lambda: gym.make(ENV_ID, **KW)] * n, autoreset_mode=mode)
    conc = ConcurrentVectorEnv([lambda: gym.make(ENV_ID, **KW)] * n, max_in_flight=n, autoreset_mode=mode)
    try:
        assert conc.single_observation_space == sync.single_observation_space
        assert conc.action_space == sync.action_space and conc.metadata["autoreset_mode"] == mode
        _same(conc.reset(seed=5), sync.reset(seed=5))
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(8):
            actions = rng.integers(0, 3, size=n)
            got, want = conc.step(actions), sync.step(actions)
            _same(got[0], want[0])
            for g, w in zip(got[1:4], want[1:4]):
                np.testing.assert_array_equal(g, w)
            _same(got[4], want[4])
            ended += int(np.sum(got[2] | got[3]))
        assert ended >= n  # max_turns=3: every env finished (and was reset) at least once
        _same(
            conc.reset(seed=9, options={"reset_mask": np.array([True, False, True, False])}),
            sync.reset(seed=9, options={"reset_mask": np.array([True, False, True, False])}),
        )
        assert conc.call("unwrapped") and conc.get_attr("np_random_seed") == sync.get_attr("np_random_seed")
    finally:
        conc.close()
        sync.close()


def test_make_vec_without_a_mode_is_gymnasiums_sync_env_with_wrappers_and_vector_kwargs():
    """The ids register no vector_entry_point: gymnasium would make it make_vec's default and then refuse
    ``wrappers=`` and ``vector_kwargs=`` (a break of every existing call)."""
    wrapped = []

    class Marking(gym.Wrapper):
        def __init__(self, env):
            super().__init__(env)
            wrapped.append(True)

    for env_id in env_ids():
        assert gym.spec(env_id).vector_entry_point is None, env_id
    envs = gym.make_vec(
        ENV_ID, num_envs=2, wrappers=[Marking], vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}, **KW
    )
    try:
        assert type(envs) is SyncVectorEnv and len(wrapped) == 2
        assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        assert all(isinstance(e, Marking) for e in envs.envs)
        envs.reset(seed=0)
        envs.step(np.zeros(2, dtype=np.int64))
    finally:
        envs.close()
    plain = gym.make_vec(ENV_ID, num_envs=2, **KW)
    assert type(plain) is SyncVectorEnv
    plain.close()


def test_make_vec_and_make_concurrent_vec_build_it():
    # The concurrent env is opt-in through gymnasium too: a spec carrying VectorEntryPoint (not the registered one).
    spec = dataclasses.replace(gym.spec(ENV_ID), vector_entry_point=VectorEntryPoint(ENV_ID))
    envs = gym.make_vec(spec, num_envs=3, vectorization_mode="vector_entry_point", max_in_flight=2, **KW)
    assert isinstance(envs, ConcurrentVectorEnv) and envs.max_in_flight == 2 and envs.num_envs == 3
    envs.close()
    serial = steer_envs.make_concurrent_vec(ENV_ID, 2, **KW)  # the simulator steps serially by default
    assert isinstance(serial, ConcurrentVectorEnv) and serial.max_in_flight == 1
    serial.close()
    assert type(gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync", **KW)) is SyncVectorEnv
    with LatencyServer(0.0) as server:  # an I/O-bound executor: every env in flight by default
        remote = steer_envs.make_concurrent_vec(ENV_ID, 5, split="test", executor=server.spec)
        assert remote.max_in_flight == 5
        remote.close()
    with pytest.raises(SteerEnvsError, match="max_in_flight"):
        make_concurrent_vec(ENV_ID, 2, max_in_flight=0, **KW)


def test_close_stops_the_threads_and_closes_the_envs():
    closed = []

    class Closing(gym.Wrapper):
        def close(self):
            closed.append(True)
            super().close()

    envs = make_concurrent_vec(ENV_ID, 3, max_in_flight=3, wrappers=[Closing], **KW)
    envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=np.int64))
    assert any(t.name.startswith("steer-vec") for t in threading.enumerate())
    envs.close()
    assert not any(t.name.startswith("steer-vec") and t.is_alive() for t in threading.enumerate())
    assert envs.closed and closed == [True] * 3
    envs.close()  # a second close is harmless
    assert closed == [True] * 3


def test_a_failing_sub_env_fails_the_step_after_the_others_finished():
    class Boom(gym.Wrapper):
        def step(self, action):
            raise RuntimeError("env 1 broke")

    finished = []

    class Slow(gym.Wrapper):
        def step(self, action):
            out = self.env.step(action)
            finished.append(True)
            return out

    fns = [
        lambda: Slow(gym.make(ENV_ID, **KW)),
        lambda: Boom(gym.make(ENV_ID, **KW)),
        lambda: Slow(gym.make(ENV_ID, **KW)),
    ]
    envs = ConcurrentVectorEnv(fns, max_in_flight=3)
    envs.reset(seed=0)
    with pytest.raises(RuntimeError, match="env 1 broke"):
        envs.step(np.zeros(3, dtype=np.int64))
    assert len(finished) == 2
    envs.close()


def test_requests_in_flight_are_bounded_and_connections_reused():
    """16 openai: episodes in flight against a server answering in 30 ms, the backend bounded at 4 requests:
    the server never sees more than 4 at once, reaches 4, and serves many more requests than connections."""
    with LatencyServer(0.03) as server:
        spec = f"{server.spec}?max_in_flight=4"
        envs = make_concurrent_vec(ENV_ID, 16, split="test", max_turns=4, executor=spec)
        try:
            assert envs.max_in_flight == 16
            envs.reset(seed=0)
            for _ in range(6):
                envs.step(np.zeros(16, dtype=np.int64))
        finally:
            envs.close()
        counts = server.counters()
    assert counts["requests"] >= 16 * 3  # each episode: a search, then an answer
    assert counts["peak_in_flight"] == 4
    assert counts["connections"] <= 4 < counts["requests"]
