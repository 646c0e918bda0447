"""What the pool tests share: a toy job, a small real workload (bank states to label, a run folder), and the
comparisons that must come out identical for every pool."""

from __future__ import annotations

import dataclasses
import os
import random
import time

from agents.steering.rollouts import collect_state_bank, continuation_seeds, make_steering_env
from steer_envs.rollouts import KILL_ONCE_ENV

BENCHMARKS = ["nq", "hotpotqa"]
TINY_TRAINING = dict(m=2, k=6, G=4, N=2, bank_tasks=8, benchmarks=BENCHMARKS, eps_sel=0.5)


@dataclasses.dataclass(frozen=True)
class Offset:
    """A toy setup: the worker's state is a number (built once per worker)."""

    value: int

    def __call__(self) -> int:
        return self.value


def add_after_a_nap(offset: int, item: int) -> tuple[int, int]:
    """A toy item: naps a random few ms (so items finish out of order), returns (item + offset, the pid)."""
    time.sleep(random.random() * 0.02)
    if item < 0:
        raise ValueError(f"negative item {item}")
    return item + offset, os.getpid()


def bank_and_requests(n_states: int = 6, G: int = 3, N: int = 3):
    """A few real bank states (sim:default, real BM25) and their (state, actions, seeds) labelling requests."""
    env = make_steering_env("sim:default", "train", benchmarks=BENCHMARKS, action_mode="text")
    tasks = [t.id for t in env.unwrapped.tasks[:3]]
    bank = collect_state_bank(env, tasks, seed=5, action_mode="text")
    notes = [
        "Search for: the director of the film",
        "Verify the answer against the passages",
        "pass",
        "Try a different query about the second entity",
    ]
    requests = [(bank[i], notes[:G], continuation_seeds([0, 1, i], N)) for i in range(min(n_states, len(bank)))]
    return env, bank, requests


def labels(measurements) -> list[tuple[float, list[float], int]]:
    return [(m.baseline, m.returns, m.rollouts) for m in measurements]


def records_without_time(records) -> list[dict]:
    """Episode records as dicts without the wall-clock field (the only one that may differ)."""
    return [{k: v for k, v in dataclasses.asdict(r).items() if k != "seconds"} for r in records]


def kill_once(monkeypatch, tmp_path, after_items: int = 2):
    """Arm the fault injection: the first worker to reach its ``after_items``-th item dies by SIGKILL."""
    marker = tmp_path / "killed-once"
    monkeypatch.setenv(KILL_ONCE_ENV, f"{after_items}:{marker}")
    return marker


def evaluate_against_a_latency_server(folder, latency: float, episodes: int):
    """``evaluate`` (no supervision, nq dev, at most 3 turns) of ``episodes`` episodes on the command line's default
    pool against a loopback server answering after ``latency`` s: the outcome and the server's counters."""
    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate
    from steer_envs.rollouts import PoolConfig
    from tests.servers.latency_server import LatencyServer

    with LatencyServer(latency) as server:
        config = EvalConfig(executor=server.spec, benchmarks=("nq",), split="dev", seeds=1, limit=episodes, max_turns=3)
        outcome = evaluate(
            RunFolder(folder, config), "no_supervision", progress=False, log=lambda _: None, pool=PoolConfig("auto")
        )
        return outcome, server.counters()
