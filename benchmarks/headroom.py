"""Headroom of a simulated testbed: can steering matter, and can a fixed rule fake it?

On the same tasks and paired seeds it runs: ``none`` (always pass), the ``oracle`` (reads hidden state, sends the
note that fixes it), ``random`` (a random option with probability ``p`` per decision) and every fixed rule (one
option at decision K, K = 0..max_at). A testbed worth training on has an oracle far above ``none`` and no fixed
rule close to the oracle: otherwise a learned steerer's gain may be a time and a keyword.

This is the fast development tool (dev split, one process); the reported acceptance numbers come from the
evaluation harness on the test split (``steer-envs eval --method no_supervision oracle best_fixed_rule random``),
which adds the paired bootstrap intervals; a profile's whole ladder (with the reading bound and the learnable-ceiling
estimate) is ``steer-envs headroom`` (:mod:`benchmarks.harness.ladder`). Usage::

    python -m benchmarks.headroom --executor sim:default --split dev --limit 40 [--seeds 1] [--p 0.35]
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

import steer_envs  # noqa: F401  (registers the ids)
from agents.steering.interventions import options_from_catalogue
from baselines.fixed_rule import FixedRule
from baselines.oracle import Oracle
from baselines.simple import NoSupervision, RandomIntervention
from steer_envs.cli.common import add_protocol_arguments
from steer_envs.data import BENCHMARKS
from steer_envs.episodes import dev_episode_seed, play_episode
from steer_envs.failures import episode_failed
from steer_envs.ids import STEERING_ENV

#: the acceptance bar of the testbed-validity issue
MIN_ORACLE_GAIN = 15.0
MAX_FIXED_SHARE = 1 / 3


@dataclass
class PolicyResult:
    f1: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    interventions: list[int] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    #: episodes cut short by a service failure (``steer_envs.failures``): no outcome, left out of every mean
    failed: int = 0

    @property
    def mean_f1(self) -> float:
        """F1 x100, benchmarks averaged (the suite's one definition of the average)."""
        return 100 * float(np.mean([np.mean(v) for v in self.f1.values()]))

    @property
    def interventions_per_task(self) -> float:
        return float(np.mean(self.interventions))


def run(executor: str = "sim:default", split: str = "dev", limit: int = 40, seeds: int = 1, p: float = 0.35,
        max_at: int = 3, benchmarks: tuple[str, ...] = BENCHMARKS, max_turns: int = 10, rules: bool = True,
        lookahead: int = 4) -> dict[str, PolicyResult]:
    env = gym.make(STEERING_ENV, executor=executor, benchmarks=list(benchmarks), split=split,
                   max_turns=max_turns)
    per: dict[str, int] = defaultdict(int)
    tasks = []
    for task in env.unwrapped.tasks:
        per[task.benchmark] += 1
        if not limit or per[task.benchmark] <= limit:
            tasks.append(task)
    options = options_from_catalogue(env.unwrapped.catalogue)
    index = {o.name: o.index for o in options}
    policies = {"none": NoSupervision(), "oracle": Oracle(index, 3, lookahead), "oracle_table": Oracle(index, 3),
                f"random:p={p:g}": RandomIntervention(options, p)}
    if rules:
        for option in options:
            for at in range(max_at + 1):
                policies[f"{option.name}@{at}"] = FixedRule(option, at)
    results: dict[str, PolicyResult] = {}
    for name, policy in policies.items():
        result = results[name] = PolicyResult()
        for task in tasks:
            for s in range(seeds):
                seed = dev_episode_seed(task.id, s)
                _, _, info = play_episode(env, policy, seed, task.id)
                if episode_failed(info):
                    result.failed += 1
                    continue
                result.f1[task.benchmark].append(float(info["f1"]))
                result.interventions.append(int(info["interventions"]))
                result.turns.append(int(info["executor_turns"]))
    env.close()
    return results


def summary(results: dict[str, PolicyResult]) -> tuple[float, str, float]:
    """(oracle gain, best fixed rule, its gain) over ``none``."""
    base = results["none"].mean_f1
    rules = {k: v.mean_f1 - base for k, v in results.items() if "@" in k}
    best = max(rules, key=rules.get) if rules else ""
    return results["oracle"].mean_f1 - base, best, rules.get(best, float("nan"))


def format_table(results: dict[str, PolicyResult], top: int = 10) -> str:
    base = results["none"].mean_f1
    benches = list(results["none"].f1)
    lines = ["| policy | " + " | ".join(benches) + " | avg F1 | gain | int./task | turns/task |",
             "|" + "---|" * (len(benches) + 5)]
    order = ["none", "oracle", "oracle_table"] + [k for k in results if k.startswith("random")]
    order += sorted((k for k in results if "@" in k), key=lambda k: -results[k].mean_f1)[:top]
    for name in order:
        r = results[name]
        cells = [f"{100 * np.mean(r.f1[b]):.1f}" for b in benches]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {r.mean_f1:.1f} | {r.mean_f1 - base:+.2f} "
                     f"| {r.interventions_per_task:.2f} | {np.mean(r.turns):.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.headroom", description=__doc__.split("\n\n")[0])
    add_protocol_arguments(parser, include=("executor", "split"), defaults={"split": "dev"})
    parser.add_argument("--limit", type=int, default=40, help="tasks per benchmark (0 = all)")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--p", type=float, default=0.35, help="random's intervention probability per decision")
    parser.add_argument("--max-at", type=int, default=3)
    add_protocol_arguments(parser, include=("max_turns",))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = run(args.executor, args.split, args.limit, args.seeds, args.p, args.max_at, max_turns=args.max_turns)
    print(f"{args.executor}, {args.split} split, {len(results['none'].interventions)} episodes per policy "
          f"({time.perf_counter() - start:.0f} s); top fixed rules shown")
    print(format_table(results))
    oracle_gain, best, best_gain = summary(results)
    ok = oracle_gain >= MIN_ORACLE_GAIN and best_gain <= MAX_FIXED_SHARE * oracle_gain
    print(f"oracle gain {oracle_gain:+.2f}; best fixed rule {best} {best_gain:+.2f} "
          f"({best_gain / oracle_gain:.0%} of the oracle's): {'met' if ok else 'NOT met'} "
          f"(oracle >= +{MIN_ORACLE_GAIN:g}, best fixed rule <= {MAX_FIXED_SHARE:.0%} of it)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
