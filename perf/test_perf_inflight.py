"""Episodes in flight without a per-step barrier: the evaluation's rollout path (``evaluate`` on the ``auto`` pool,
which becomes a greenlets pool of one task per request the backend keeps in flight; and on a threads pool of as many
threads) at N = 256 episodes in flight, the async vector env (on each engine), beside the concurrent vector env
(``steer_envs.vector``: all N step, then all wait for the slowest) and gymnasium's
SyncVectorEnv, against a loopback OpenAI-compatible server in its own process whose latency is lognormal (mean 1 s,
coefficient of variation 1) or fixed (100 ms); and, at the fixed latency, the ``processes`` pool. Figures: requests
per second at the server over the steady state (every slot busy: after the first N episodes' requests, before the
last N's), as a share of N / mean latency, and the client's CPU per request (pytest-benchmark; run through
``python -m perf.suite``)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401
from perf.gpu_check import drive_async_pool
from steer_envs.ids import STEERING_ENV

#: episodes in flight
N = 256
#: (name, mean latency s, coefficient of variation)
LATENCIES = {"lognormal-1s": (1.0, 1.0), "fixed-100ms": (0.1, 0.0)}
#: evaluation episodes per setting (nq test tasks x seeds): enough for a few seconds with every slot busy
EVAL_EPISODES = {"lognormal-1s": (600, 2), "fixed-100ms": (775, 4)}
#: (vector env, envs, timed vector steps) per latency; SyncVectorEnv sends one request at a time, so its rate is
#: 1 / latency whatever N (a small N keeps its run to seconds)
VECTOR_RUNS = {
    "lognormal-1s": [("concurrent", N, 2), ("sync", 8, 1)],
    "fixed-100ms": [("concurrent", N, 10), ("sync", 32, 1)],
}
MAX_TURNS = 4
#: the eval path's steady requests/s as a share of N / mean latency, per latency: the acceptance bars
EVAL_TARGET_SHARE = {"lognormal-1s": 0.9, "fixed-100ms": 0.8}


@pytest.fixture(scope="module")
def servers():
    """One server per latency, each in its own process (as a model server is): the benchmark measures the client."""
    from tests.servers.latency_server import LatencyServerProcess

    started = {
        name: LatencyServerProcess(mean, reply="search", cv=cv, seed=0).start()
        for name, (mean, cv) in LATENCIES.items()
    }
    try:
        yield started
    finally:
        for server in started.values():
            server.stop()


@dataclass
class Sampler:
    """Polls the server's request count (and this process's CPU time) every ``every`` seconds in a thread."""

    server: object
    every: float = 0.2
    samples: list[tuple[float, int, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), self.server.counters()["requests"], time.process_time()))
            self._stop.wait(self.every)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def steady(self, low: int, high: int) -> dict[str, float]:
        """Requests/s and client CPU ms per request between the samples with ``low`` and ``high`` requests."""
        window = [s for s in self.samples if low <= s[1] <= high]
        if len(window) < 2 or window[-1][1] == window[0][1]:
            return {"requests_per_second": float("nan"), "cpu_ms_per_request": float("nan"), "window_s": 0.0}
        (t0, r0, c0), (t1, r1, c1) = window[0], window[-1]
        return {
            "requests_per_second": (r1 - r0) / (t1 - t0),
            "cpu_ms_per_request": 1e3 * (c1 - c0) / (r1 - r0),
            "window_s": t1 - t0,
        }


def _evaluate(spec: str, limit: int, seeds: int, pool, tmp_path) -> int:
    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate

    config = EvalConfig(executor=spec, benchmarks=("nq",), split="test", seeds=seeds, limit=limit, max_turns=MAX_TURNS)
    outcome = evaluate(RunFolder(tmp_path, config), "no_supervision", progress=False, log=lambda _: None, pool=pool)
    assert all(r.failure is None for r in outcome.records)
    return outcome.ran


def _record(benchmark, latency: str, path: str, in_flight: int, figures: dict, counts: dict, **extra) -> None:
    mean = LATENCIES[latency][0]
    benchmark.extra_info.update(
        {
            "latency": latency,
            "mean_latency_s": mean,
            "cv": LATENCIES[latency][1],
            "path": path,
            "in_flight": in_flight,
            **figures,
            "share_of_ceiling": figures["requests_per_second"] / (N / mean),
            "ceiling": N / mean,
            "peak_in_flight": counts.get("peak_in_flight"),
            "load_1min": os.getloadavg()[0],
            **extra,
        }
    )


#: the eval path's pools: the command line's default (``auto``: greenlets for ``openai:``) and threads beside it
EVAL_POOLS = {"greenlets": "auto", "threads": "threads"}


@pytest.mark.parametrize("latency,pool_kind", [(lat, kind) for lat in LATENCIES for kind in EVAL_POOLS])
def test_eval_rollout_path_in_flight(benchmark, servers, latency, pool_kind, tmp_path):
    """``evaluate`` with N episodes in flight, none waiting for another's step: on the command line's default pool
    (the acceptance row) and on a threads pool of N threads."""
    from steer_envs.rollouts import PoolConfig

    server = servers[latency]
    limit, seeds = EVAL_EPISODES[latency]
    spec = f"{server.spec}?max_in_flight={N}"
    pool = PoolConfig(EVAL_POOLS[pool_kind], workers=N if pool_kind == "threads" else 1)
    _evaluate(spec, 8, 1, pool, tmp_path / "warm")  # corpus, BM25 index, tasks, connections
    server.counters(reset=True)
    with Sampler(server) as sampler:
        ran = benchmark.pedantic(_evaluate, args=(spec, limit, seeds, pool, tmp_path / "run"), rounds=1, iterations=1)
    counts = server.counters()
    per_episode = counts["requests"] / ran
    figures = sampler.steady(int(N * per_episode), int(counts["requests"] - N * per_episode))
    assert ran == limit * seeds and figures["window_s"] > 1.0
    # more in flight than the pool's former fixed 16 threads (where client CPU binds, as at 100 ms on 2 cores, the
    # requests in flight are what that CPU sustains times the latency, not N)
    assert counts["peak_in_flight"] > 16
    default = EVAL_POOLS[pool_kind] == "auto"
    _record(
        benchmark,
        latency,
        f"eval ({pool_kind} pool{', the default' if default else ''})",
        N,
        figures,
        counts,
        episodes=ran,
        requests=counts["requests"],
        target_share=EVAL_TARGET_SHARE[latency] if default else None,
    )


def _vector_env(kind: str, n: int, spec: str):
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from steer_envs.vector import make_concurrent_vec

    # same-step autoreset: a finished episode restarts inside the step, so every vector step is n requests
    kw = dict(executor=f"{spec}?max_in_flight={N}", split="test", max_turns=MAX_TURNS)
    if kind == "sync":
        return SyncVectorEnv([lambda: gym.make(STEERING_ENV, **kw)] * n, autoreset_mode=AutoresetMode.SAME_STEP)
    return make_concurrent_vec(STEERING_ENV, n, autoreset_mode=AutoresetMode.SAME_STEP, **kw)


def _steps(envs, n: int, num_envs: int) -> None:
    actions = np.zeros(num_envs, dtype=np.int64)
    for _ in range(n):
        envs.step(actions)


@pytest.mark.parametrize(
    "latency,kind,num_envs,steps",
    [(lat, *run) for lat, runs in VECTOR_RUNS.items() for run in runs],
    ids=[f"{lat}-{run[0]}-{run[1]}" for lat, runs in VECTOR_RUNS.items() for run in runs],
)
def test_vector_envs_beside(benchmark, servers, latency, kind, num_envs, steps):
    """The per-step barrier: every vector step waits for its slowest request."""
    server = servers[latency]
    envs = _vector_env(kind, num_envs, server.spec)
    try:
        envs.reset(seed=0)
        _steps(envs, 1, num_envs)  # connections, BM25 index, tasks
        server.counters(reset=True)
        start, cpu = time.perf_counter(), time.process_time()
        benchmark.pedantic(_steps, args=(envs, steps, num_envs), rounds=1, iterations=1)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        counts = server.counters()
    finally:
        envs.close()
    assert counts["requests"] == steps * num_envs  # one request per env and vector step
    figures = {
        "requests_per_second": counts["requests"] / seconds,
        "cpu_ms_per_request": 1e3 * cpu / counts["requests"],
        "window_s": seconds,
    }
    name = {"concurrent": "make_concurrent_vec", "sync": "SyncVectorEnv"}[kind]
    _record(
        benchmark,
        latency,
        name,
        num_envs,
        figures,
        counts,
        vector_steps=steps,
        requests=counts["requests"],
        share_of_own_ceiling=figures["requests_per_second"] / (num_envs / LATENCIES[latency][0]),
    )


#: the async pool's envs returned per recv(): a few, so that few envs wait on the learner at any moment (at most
#: about 2 x batch of the N are out of the server's hands), per latency, with the env results to collect
ASYNC_BATCH = 8
ASYNC_RESULTS = {"lognormal-1s": 3000, "fixed-100ms": 12000}
#: the async pool's steady requests/s as a share of N / mean latency: the acceptance bars
ASYNC_TARGET_SHARE = {"lognormal-1s": 0.9, "fixed-100ms": 0.8}


@pytest.mark.parametrize("latency,engine", [(lat, engine) for lat in LATENCIES for engine in ("greenlets", "threads")])
def test_async_pool_in_flight(benchmark, servers, latency, engine):
    """The EnvPool-style async vector env (steer_envs.async_vector): N envs, the first few ready returned per
    recv() and sent straight back, so no env waits for another's reply; on its default engine (greenlets: the
    acceptance row) and on threads."""
    from steer_envs.async_vector import make_async_pool

    server = servers[latency]
    kw = dict(executor=f"{server.spec}?max_in_flight={N}", split="test", max_turns=MAX_TURNS)
    pool = make_async_pool(STEERING_ENV, N, batch_size=ASYNC_BATCH, engine=engine, **kw)
    try:
        pool.async_reset(seed=0)
        drive_async_pool(pool, 2 * N)  # connections, BM25 index, tasks
        server.counters(reset=True)
        with Sampler(server) as sampler:
            got = benchmark.pedantic(drive_async_pool, args=(pool, ASYNC_RESULTS[latency]), rounds=1, iterations=1)
        counts = server.counters()
    finally:
        pool.close()
    figures = sampler.steady(N, int(counts["requests"] - N))
    assert got >= ASYNC_RESULTS[latency] and figures["window_s"] > 1.0
    default = engine == "greenlets"
    _record(
        benchmark,
        latency,
        f"AsyncPoolEnv (batch {ASYNC_BATCH}, {engine}{', the default' if default else ''})",
        N,
        figures,
        counts,
        results=got,
        requests=counts["requests"],
        target_share=ASYNC_TARGET_SHARE[latency] if default else None,
    )


def test_eval_on_the_processes_pool(benchmark, servers, tmp_path):
    """``--pool processes``: a worker process runs one episode at a time, so its in-flight count is its worker
    count (2 here, one per core), whatever the server could take."""
    from steer_envs.rollouts import PoolConfig, make_pool

    latency, workers = "fixed-100ms", 2
    server = servers[latency]
    spec = f"{server.spec}?max_in_flight={N}"
    with make_pool(PoolConfig("processes", workers=workers)) as pool:
        _evaluate(spec, 4, 1, pool, tmp_path / "warm")  # worker start-up: corpus and index in each
        server.counters(reset=True)
        with Sampler(server) as sampler:
            ran = benchmark.pedantic(_evaluate, args=(spec, 40, 1, pool, tmp_path / "run"), rounds=1, iterations=1)
    counts = server.counters()
    per_episode = counts["requests"] / ran
    figures = sampler.steady(int(workers * per_episode), int(counts["requests"] - workers * per_episode))
    _record(
        benchmark,
        latency,
        "eval (processes pool, 2 workers)",
        workers,
        figures,
        counts,
        episodes=ran,
        requests=counts["requests"],
    )
