"""Headroom of the simulated testbed: can steering matter, and can the testbed tell good steering from bad?

Three steerers on SearchSteering-v0 over the same tasks and seeds:

* ``none``: always pass (the frozen executor alone);
* ``oracle``: reads ``info["privileged"]`` (the simulator's ground truth) and picks the catalogue intervention
  that fixes the current drift, and only then;
* ``random``: one intervention per task, a uniformly random catalogue template at a uniformly random decision
  among the first two (the unsupervised executor takes about two turns).

Usage: ``python -m benchmarks.headroom [--executor sim:default] [--split test] [--limit N] [--seeds 1]``.
The oracle must gain at least 10 F1 points over ``none``; ``random`` must gain clearly less.
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import steer_envs  # noqa: F401  (registers the ids)
from steer_envs.data import BENCHMARKS

Policy = Callable[[dict, dict, np.random.Generator, int], int]


def _index(env, name: str) -> int:
    return [t.name for t in env.unwrapped.catalogue].index(name)


def make_oracle(env) -> Policy:
    """The intervention a perfect steerer would choose, from the simulator's hidden state."""
    idx = {t.name: i for i, t in enumerate(env.unwrapped.catalogue)}

    def oracle(obs: dict, info: dict, rng: np.random.Generator, decision: int) -> int:
        p = info["privileged"]
        if info["interventions"] >= 3:
            return 0
        drift = p["drift"]
        if drift == "never_answer":
            return idx["answer_now"] if p["evidence_in_hand"] and p["answer_would_be_correct"] else idx["search_question"]
        if drift == "redundant":
            return idx["answer_now"] if p["answer_would_be_correct"] else idx["verify"]
        if drift == "side_goal":
            return idx["refocus"]
        if drift == "fixation":
            return idx["backtrack"]
        if p["evidence_in_hand"] and not p["answer_would_be_correct"]:
            return idx["verify"]
        if p["premature"] and not p["answer_would_be_correct"]:
            return idx["verify"] if p["evidence_unrecognised"] else idx["keep_searching"]
        return 0

    return oracle


def make_random(env) -> Policy:
    n = len(env.unwrapped.catalogue)
    chosen: dict[str, int] = {}

    def random_policy(obs: dict, info: dict, rng: np.random.Generator, decision: int) -> int:
        if decision == 0:
            chosen["at"] = int(rng.integers(2))
        return int(rng.integers(1, n)) if decision == chosen["at"] else 0

    return random_policy


def make_none(env) -> Policy:
    return lambda obs, info, rng, decision: 0


POLICIES: dict[str, Callable[[gym.Env], Policy]] = {"none": make_none, "oracle": make_oracle, "random": make_random}


@dataclass
class Totals:
    n: int = 0
    f1: float = 0.0
    interventions: int = 0
    turns: int = 0

    def add(self, info: dict) -> None:
        self.n += 1
        self.f1 += info["f1"]
        self.interventions += info["interventions"]
        self.turns += info["executor_turns"]


def run(executor: str = "sim:default", split: str = "test", limit: int = 0, seeds: int = 1,
        benchmarks: tuple[str, ...] = BENCHMARKS, max_turns: int = 10) -> dict[str, dict[str, Totals]]:
    results: dict[str, dict[str, Totals]] = {name: defaultdict(Totals) for name in POLICIES}
    env = gym.make("steer_envs/SearchSteering-v0", executor=executor, benchmarks=list(benchmarks), split=split,
                   max_turns=max_turns)
    tasks = env.unwrapped.tasks
    if limit:
        per: dict[str, int] = defaultdict(int)
        tasks = [t for t in tasks if (per.__setitem__(t.benchmark, per[t.benchmark] + 1) or per[t.benchmark]) <= limit]
    for name, factory in POLICIES.items():
        policy = factory(env)
        for i, task in enumerate(tasks):
            for s in range(seeds):
                seed = 1000 * i + s
                rng = np.random.default_rng(seed + 7)
                obs, info = env.reset(seed=seed, options={"task_id": task.id})
                done, decision = False, 0
                while not done:
                    obs, _, term, trunc, info = env.step(policy(obs, info, rng, decision))
                    decision += 1
                    done = term or trunc
                results[name][task.benchmark].add(info)
                results[name]["all"].add(info)
    return results


def format_table(results: dict[str, dict[str, Totals]]) -> str:
    benches = [b for b in BENCHMARKS if b in results["none"]] + ["all"]
    head = "| steerer | " + " | ".join(benches) + " | gain (all) | interventions/task | turns/task |"
    lines = [head, "|" + "---|" * (len(benches) + 4)]
    base = results["none"]["all"].f1 / max(results["none"]["all"].n, 1)
    for name, per in results.items():
        cells = [f"{100 * per[b].f1 / max(per[b].n, 1):.1f}" for b in benches]
        tot = per["all"]
        gain = 100 * (tot.f1 / max(tot.n, 1) - base)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {gain:+.1f} | {tot.interventions / max(tot.n, 1):.2f} "
                     f"| {tot.turns / max(tot.n, 1):.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.headroom", description=__doc__.split("\n\n")[0])
    parser.add_argument("--executor", default="sim:default")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=0, help="tasks per benchmark (0 = all)")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--max-turns", type=int, default=10)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = run(args.executor, args.split, args.limit, args.seeds, max_turns=args.max_turns)
    print(f"F1 on the {args.split} split, executor {args.executor}, {results['none']['all'].n} episodes per steerer")
    print(format_table(results))
    print(f"({time.perf_counter() - start:.0f} s)")
    none = results["none"]["all"]
    gain = lambda name: (results[name]["all"].f1 - none.f1) / max(none.n, 1) * 100  # noqa: E731
    ok = gain("oracle") >= 10 and gain("random") < gain("oracle") / 2
    print("headroom requirement (oracle >= +10 F1, random < half the oracle's gain):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
