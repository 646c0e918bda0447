"""``gymnasium.make_vec`` of SearchSteering-v0 with 1 and 2 envs, sync and async: env steps per second under a
pass policy (pytest-benchmark; run through ``python -m benchmarks.suite``)."""
from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401
from benchmarks.perf_scale import current

SETTINGS = [(1, "sync"), (2, "sync"), (1, "async"), (2, "async")]


def _steps(envs, n: int, num_envs: int) -> None:
    actions = np.zeros(num_envs, dtype=np.int64)
    for _ in range(n):
        envs.step(actions)


@pytest.mark.parametrize("num_envs,mode", SETTINGS, ids=[f"{m}-{n}" for n, m in SETTINGS])
def test_make_vec_steps_per_second(benchmark, num_envs, mode):
    kwargs = {"vector_kwargs": {"shared_memory": False}} if mode == "async" else {}
    envs = gym.make_vec("steer_envs/SearchSteering-v0", num_envs=num_envs, vectorization_mode=mode, split="test",
                        **kwargs)
    try:
        envs.reset(seed=0)
        _steps(envs, 20, num_envs)  # load index, corpus and tasks in every worker
        n = current().vec_steps
        start = time.perf_counter()
        benchmark.pedantic(_steps, args=(envs, n, num_envs), rounds=1, iterations=1)
        seconds = time.perf_counter() - start
    finally:
        envs.close()
    benchmark.extra_info.update({"num_envs": num_envs, "mode": mode, "vector_steps": n,
                                 "env_steps_per_second": n * num_envs / seconds})
