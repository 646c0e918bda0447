"""``gymnasium.make_vec`` of SearchSteering-v0 with 1 and 2 envs, sync and async: env steps per second under a
pass policy; and ``openai:`` executor envs against a loopback server that answers every request after 100 ms:
requests per second of the concurrent vector env (``steer_envs.vector``) at N = 64 beside gymnasium's
SyncVectorEnv at N = 32, as a share of the ceiling N / latency (pytest-benchmark; run through
``python -m perf.suite``)."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401
from perf.perf_scale import current
from steer_envs.ids import STEERING_ENV

SETTINGS = [(1, "sync"), (2, "sync"), (1, "async"), (2, "async")]


def _steps(envs, n: int, num_envs: int) -> None:
    actions = np.zeros(num_envs, dtype=np.int64)
    for _ in range(n):
        envs.step(actions)


@pytest.mark.parametrize("num_envs,mode", SETTINGS, ids=[f"{m}-{n}" for n, m in SETTINGS])
def test_make_vec_steps_per_second(benchmark, num_envs, mode):
    kwargs = {"vector_kwargs": {"shared_memory": False}} if mode == "async" else {}
    envs = gym.make_vec(STEERING_ENV, num_envs=num_envs, vectorization_mode=mode, split="test", **kwargs)
    try:
        envs.reset(seed=0)
        _steps(envs, 20, num_envs)  # load index, corpus and tasks in every worker
        n = current().vec_steps
        start = time.perf_counter()
        benchmark.pedantic(_steps, args=(envs, n, num_envs), rounds=1, iterations=1)
        seconds = time.perf_counter() - start
    finally:
        envs.close()
    benchmark.extra_info.update(
        {"num_envs": num_envs, "mode": mode, "vector_steps": n, "env_steps_per_second": n * num_envs / seconds}
    )


# -- many episodes in flight: openai: executors against a loopback server answering every request in 100 ms -------
LATENCY = 0.1
#: (vector env, envs, reply): the concurrent vector env at N = 64 beside gymnasium's SyncVectorEnv at N = 32, episodes
#: of a search then an answer (real BM25 between the requests); and N = 64 with one-answer episodes (no search: the
#: client's HTTP and env work alone)
OPENAI_SETTINGS = [("concurrent", 64, "search"), ("sync", 32, "search"), ("concurrent", 64, "answer")]
#: timed vector steps per setting (quick, full): SyncVectorEnv makes one request at a time, ~3 s a vector step
OPENAI_STEPS = {"concurrent": (10, 40), "sync": (2, 4)}
#: the concurrent vector env at N = 64 must reach this share of N / latency from one process
OPENAI_TARGET_SHARE = 0.8


@pytest.fixture(scope="module")
def latency_servers():
    """The servers in their own processes, as model servers are: the benchmark measures the client alone."""
    from tests.servers.latency_server import LatencyServerProcess

    with (
        LatencyServerProcess(LATENCY, reply="search") as search,
        LatencyServerProcess(LATENCY, reply="answer") as answer,
    ):
        yield {"search": search, "answer": answer}


def _openai_envs(kind: str, n: int, spec: str):
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from steer_envs.vector import make_concurrent_vec

    # same-step autoreset: a finished episode restarts inside the step, so every vector step is n requests
    kw = dict(executor=f"{spec}?max_in_flight=256", split="test", max_turns=8)
    if kind == "sync":
        return SyncVectorEnv([lambda: gym.make(STEERING_ENV, **kw)] * n, autoreset_mode=AutoresetMode.SAME_STEP)
    return make_concurrent_vec(STEERING_ENV, n, autoreset_mode=AutoresetMode.SAME_STEP, **kw)


@pytest.mark.parametrize(
    "kind,num_envs,reply",
    OPENAI_SETTINGS,
    ids=[f"{k}-{n}" + ("" if r == "search" else f"-{r}") for k, n, r in OPENAI_SETTINGS],
)
def test_openai_requests_per_second(benchmark, latency_servers, kind, num_envs, reply):
    latency_server = latency_servers[reply]
    envs = _openai_envs(kind, num_envs, latency_server.spec)
    steps = OPENAI_STEPS[kind][current().name == "full"]
    try:
        envs.reset(seed=0)
        _steps(envs, 2, num_envs)  # connections, BM25 index, tasks
        latency_server.counters(reset=True)
        start = time.perf_counter()
        benchmark.pedantic(_steps, args=(envs, steps, num_envs), rounds=1, iterations=1)
        seconds = time.perf_counter() - start
        counts = latency_server.counters()
    finally:
        envs.close()
    rate = counts["requests"] / seconds
    ceiling = num_envs / LATENCY
    assert counts["requests"] == steps * num_envs  # one request per env and vector step
    if kind == "concurrent":
        assert counts["peak_in_flight"] > num_envs // 2 and counts["connections"] < counts["requests"]
    benchmark.extra_info.update(
        {
            "vector_env": kind,
            "num_envs": num_envs,
            "reply": reply,
            "latency_s": LATENCY,
            "vector_steps": steps,
            "requests": counts["requests"],
            "requests_per_second": rate,
            "share_of_ceiling": rate / ceiling,
            "new_connections": counts["connections"],
            "peak_in_flight": counts["peak_in_flight"],
            "target_share": OPENAI_TARGET_SHARE if kind == "concurrent" and reply == "search" else None,
        }
    )
