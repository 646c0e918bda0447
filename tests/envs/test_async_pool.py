"""The EnvPool-style async vector env (steer_envs.async_vector): with ``batch_size == num_envs`` its ``step`` is
SyncVectorEnv's; with fewer, every env's trajectory is the one SyncVectorEnv gives that env for the same seed and
actions, whatever order the envs finish in (every env id); over real HTTP against a loopback server whose latency
varies, ``recv`` returns the envs that are ready while the slow ones are still waiting; failures and misuse say
what is wrong."""

from __future__ import annotations

import copy
import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from steer_envs.async_vector import ENGINES, AsyncPoolEnv, SubEnvFailed, make_async_pool
from steer_envs.envs.registration import env_ids
from steer_envs.errors import SteerEnvsError
from tests.envs.test_concurrent_vector import _same
from tests.servers.latency_server import LatencyServer, answer_at_once

ENV_ID = "steer_envs/SearchSteering-v0"
KW = {"split": "test", "max_turns": 3, "executor": "sim:default"}


def _env_fn(env_id: str, **kwargs):
    return lambda: gym.make(env_id, split="dev", max_turns=3, **kwargs)


def _unbatched_obs(space, obs, j):
    """Env ``j``'s observation out of a batched one (dicts of arrays and tuples; custom text spaces included)."""
    if isinstance(obs, dict):
        return {key: _unbatched_obs(None, value, j) for key, value in obs.items()}
    return obs[j]


@pytest.mark.parametrize("engine", ENGINES)
def test_step_with_every_env_in_the_batch_is_sync_vector_envs_step(engine):
    n = 2
    sync = SyncVectorEnv([lambda: gym.make(ENV_ID, **KW)] * n, autoreset_mode=AutoresetMode.NEXT_STEP)
    pool = AsyncPoolEnv([lambda: gym.make(ENV_ID, **KW)] * n, engine=engine)
    try:
        assert pool.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        assert pool.single_observation_space == sync.single_observation_space
        got_obs, got_info = pool.reset(seed=5)
        want_obs, want_info = sync.reset(seed=5)
        _same(got_obs, want_obs)
        got_info.pop("env_id")
        _same(got_info, want_info)
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(6):
            actions = rng.integers(0, 3, size=n)
            got, want = pool.step(actions), sync.step(actions)
            got[4].pop("env_id")
            _same(got, want)
            ended += int(np.sum(got[2] | got[3]))
        assert ended >= 1  # the run went through autoresets
    finally:
        pool.close()
        sync.close()


def _actions_for(space: gym.Space, env_id: int, steps: int) -> list:
    """Each env's own action sequence, fixed by its id alone (so any arrival order sends the same actions)."""
    space = copy.deepcopy(space)
    space.seed(1000 + env_id)
    return [space.sample() for _ in range(steps)]


def _batch(space: gym.Space, actions: list):
    return tuple(actions) if isinstance(space, gym.spaces.Text) else np.array(actions)


def _trajectories_sync(make, n: int, seed: int, steps: int) -> list[list[tuple]]:
    sync = SyncVectorEnv([make] * n, autoreset_mode=AutoresetMode.NEXT_STEP)
    try:
        space = sync.single_observation_space
        obs, _ = sync.reset(seed=seed)
        per_env = [[("reset", _unbatched_obs(space, obs, i))] for i in range(n)]
        plans = [_actions_for(sync.single_action_space, i, steps) for i in range(n)]
        for t in range(steps):
            obs, rew, term, trunc, _ = sync.step(_batch(sync.single_action_space, [plans[i][t] for i in range(n)]))
            for i in range(n):
                per_env[i].append((_unbatched_obs(space, obs, i), rew[i], term[i], trunc[i]))
        return per_env
    finally:
        sync.close()


def _trajectories_async(make, n: int, batch: int, seed: int, steps: int, engine: str) -> list[list[tuple]]:
    """Every env keeps working (as a learner keeps them) until each has ``steps`` steps after its reset; the
    results each env gave first are its trajectory."""
    pool = AsyncPoolEnv([make] * n, batch_size=batch, max_in_flight=n, engine=engine)
    try:
        space = pool.single_observation_space
        plans = [_actions_for(pool.single_action_space, i, 3 * steps) for i in range(n)]
        per_env: list[list[tuple]] = [[] for _ in range(n)]
        sent = [0] * n
        pool.async_reset(seed=seed)
        while any(len(t) < steps + 1 for t in per_env):
            obs, rew, term, trunc, info = pool.recv()
            ids = [int(i) for i in info["env_id"]]
            for j, i in enumerate(ids):
                item = _unbatched_obs(space, obs, j)
                per_env[i].append(("reset", item) if not per_env[i] else (item, rew[j], term[j], trunc[j]))
            pool.send(_batch(pool.single_action_space, [plans[i][sent[i]] for i in ids]), ids)
            for i in ids:
                sent[i] += 1
        return [t[: steps + 1] for t in per_env]
    finally:
        pool.close()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("env_id", env_ids())
def test_each_envs_trajectory_is_its_own_whatever_order_envs_finish_in(env_id, engine):
    """Conformance, every env id, on each engine: 4 envs, 2 returned per recv, each env driven by its own action
    sequence; every env's trajectory (seeded ``seed + i``, NEXT_STEP autoreset) equals SyncVectorEnv's for that env
    (threads finish in any order; the served-executor test below has greenlets finish out of order)."""
    make = _env_fn(env_id)
    n, steps = 4, 5
    want = _trajectories_sync(make, n, seed=11, steps=steps)
    got = _trajectories_async(make, n, batch=2, seed=11, steps=steps, engine=engine)
    for i in range(n):
        assert len(got[i]) == len(want[i]) == steps + 1
        for a, b in zip(got[i], want[i]):
            _same(a, b)


def test_recv_returns_the_envs_that_are_ready_while_a_slow_one_still_waits():
    """Three ``openai:`` envs against a loopback server that holds env 0's request until the test lets it go: the
    first recv returns envs 1 and 2 (ready) while env 0 is still in flight, without waiting for it."""
    gate, slow = threading.Event(), {}

    def reply(prompt: str):
        if slow.get("goal") and slow["goal"] in prompt:
            gate.wait(60)
        return answer_at_once(prompt)

    with LatencyServer(0.0, reply=reply) as server:
        pool = make_async_pool(ENV_ID, 3, batch_size=2, split="dev", max_turns=2, executor=server.spec)
        try:
            assert pool.max_in_flight == 3 and pool.engine == "greenlets"  # openai:: every env in flight, one thread
            obs, info = pool.reset(seed=0)
            assert list(info["env_id"]) == [0, 1, 2]
            slow["goal"] = obs["goal"][0]
            assert obs["goal"][1] != slow["goal"] != obs["goal"][2]
            pool.send(np.zeros(3, dtype=np.int64), [0, 1, 2])
            _, _, _, _, first = pool.recv()
            assert sorted(first["env_id"]) == [1, 2] and pool.in_flight == [0]  # 0 is still waiting
            gate.set()
            pool.send(np.zeros(2, dtype=np.int64), first["env_id"])
            _, _, _, _, second = pool.recv()
            assert 0 in second["env_id"] or pool.in_flight == [0]
        finally:
            gate.set()
            pool.close()


class _Fails(gym.Wrapper):
    """Env 1's second step raises (a served executor whose server failed, say)."""

    made = 0

    def __init__(self, env):
        super().__init__(env)
        self.index, _Fails.made = _Fails.made, _Fails.made + 1
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.index == 1 and self.steps == 2:
            raise RuntimeError("env 1 failed on its second step")
        return super().step(action)


def test_a_failing_env_raises_in_the_recv_that_collects_it_and_the_others_are_kept():
    _Fails.made = 0
    pool = make_async_pool(ENV_ID, 3, batch_size=3, max_in_flight=1, wrappers=[_Fails], **KW)
    try:
        pool.reset(seed=0)
        pool.step(np.zeros(3, dtype=np.int64))
        pool.send(np.zeros(3, dtype=np.int64))
        with pytest.raises(SubEnvFailed, match="env 1 of the pool failed: RuntimeError: env 1 failed") as failed:
            pool.recv()
        assert failed.value.env_id == 1 and isinstance(failed.value.__cause__, RuntimeError)
        assert 1 not in pool.in_flight  # the failed env is idle; the others' results wait for the next recv
        with pytest.raises(SteerEnvsError, match="with results not yet received: \\[0\\]"):
            pool.send(np.zeros(1, dtype=np.int64), [0])  # env 0's result waits for a recv: not sent to twice
        pool.send(np.zeros(1, dtype=np.int64), [1])  # the failed env is reset on its next send
        obs, rewards, terminations, truncations, info = pool.recv()
        assert sorted(info["env_id"]) == [0, 1, 2] and rewards[list(info["env_id"]).index(1)] == 0.0
    finally:
        pool.close()


def test_misuse_says_what_is_wrong():
    with pytest.raises(SteerEnvsError, match="batch_size must be an integer from 1 to num_envs=2"):
        make_async_pool(ENV_ID, 2, batch_size=3, **KW)
    pool = make_async_pool(ENV_ID, 2, batch_size=1, **KW)
    try:
        with pytest.raises(SteerEnvsError, match="step\\(\\) returns every env, so it needs batch_size == num_envs"):
            pool.step(np.zeros(2, dtype=np.int64))
        with pytest.raises(SteerEnvsError, match="only 0 are in flight"):
            pool.recv()
        pool.async_reset(seed=0)
        with pytest.raises(SteerEnvsError, match="still in flight"):
            pool.send(np.zeros(1, dtype=np.int64), [0])
        with pytest.raises(SteerEnvsError, match="distinct ids"):
            pool.recv()
            pool.send(np.zeros(2, dtype=np.int64), [5, 5])
        with pytest.raises(SteerEnvsError, match="send\\(\\) got {.a.: 2} actions per key for 1 env ids"):
            pool.send({"a": [0, 0]}, [1])
    finally:
        pool.close()
    with pytest.raises(SteerEnvsError, match="closed AsyncPoolEnv"):
        pool.recv()


def test_the_async_reinforce_example_trains_against_a_served_executor():
    """docs/examples/async_reinforce.py, as a user runs it, against a loopback OpenAI-compatible server (a search,
    then an answer, 10 ms each): it finishes its episodes and updates its policy."""
    import runpy

    from steer_envs.paths import REPO_ROOT

    example = runpy.run_path(str(REPO_ROOT / "docs" / "examples" / "async_reinforce.py"))
    with LatencyServer(0.01) as server:
        stats = example["main"](
            [
                "--executor",
                server.spec,
                "--num-envs",
                "6",
                "--batch-size",
                "2",
                "--episodes",
                "12",
                "--update-every",
                "4",
            ]
        )
        requests = server.counters()["requests"]
    assert stats["episodes"] >= 12 and stats["updates"] >= 2
    assert np.isfinite(stats["first_quarter_return"]) and np.isfinite(stats["last_quarter_return"])
    assert requests >= 12  # every episode's executor ran on the server
