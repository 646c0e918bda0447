"""Counterfactual credit per role of the hand-off pipeline: ``python -m studies.handoff_credit.run``.

For unsupervised episodes of HandoffSteering-v0, the env is forked at every hand-off and continued ``N`` times
(common random numbers: the same N seeds for both branches) with the message let through, and with it rejected
bare (its sender redoes the turn with no feedback); every other decision passes. A hand-off's message *matters*
for a seed when the two branches end with different F1. Reported per sending role: how many hand-offs, the share
of (hand-off, seed) pairs where a retry changes the final F1, the shares where it raises / lowers it, and the mean
change. With ``--options`` every catalogue intervention is measured the same way, by hand-off kind (sender ->
receiver): the intervention landscape a steerer has to learn (no option should help almost everywhere).

Writes ``OUT/credit.json`` and ``OUT/credit.md``. ``--quick``: one task of two benchmarks, two continuation seeds
(a smoke run of the same measurement, not the page's numbers).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from steer_envs.cli.common import add_protocol_arguments
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.failures import episode_failed
from steer_envs.ids import HANDOFF_ENV

BARE_RETRY = "Reject:"
#: ``--quick``: the measurement on one task of each of two benchmarks, two continuations per branch
QUICK = {"per_benchmark": 1, "seeds": 2, "benchmarks": ["nq", "hotpotqa"]}


def _continue(branch, first_action) -> float | None:
    """Take ``first_action`` then pass to the end (terminated or truncated); the final F1, or None when a service
    failure cut the branch short (``steer_envs.failures``: no outcome, the pair is dropped)."""
    _, _, terminated, truncated, info = branch.step(first_action)
    while not (terminated or truncated):
        _, _, terminated, truncated, info = branch.step("pass" if branch.config.action_mode == "text" else 0)
    return None if episode_failed(info) else float(info["f1"])


def _mean(values) -> float | None:
    finished = [v for v in values if v is not None]
    return float(np.mean(finished)) if finished else None


def credit(
    split: str = "dev",
    per_benchmark: int = 10,
    seeds: int = 4,
    options: bool = False,
    executor: str = "sim:default",
    max_turns: int = 30,
    benchmarks: Sequence[str] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    import gymnasium as gym

    import steer_envs  # noqa: F401
    from steer_envs.data import load_tasks
    from steer_envs.data.tasks import BENCHMARKS
    from steer_envs.envs.catalogue import HANDOFF

    torch_threads()
    ids = [t.id for b in (benchmarks or BENCHMARKS) for t in load_tasks(b, split)[:per_benchmark]]
    env = gym.make(HANDOFF_ENV, executor=executor, split=split, max_turns=max_turns, action_mode="text", task_ids=ids)
    base = env.unwrapped
    diffs: dict[str, list[float]] = defaultdict(list)
    handoffs: dict[str, int] = defaultdict(int)
    landscape: dict[tuple[str, str], list[float]] = defaultdict(list)
    failed_pairs = 0
    start = time.time()
    for i, task_id in enumerate(ids):
        env.reset(seed=i, options={"task_id": task_id})
        while not base.pipeline.done:
            h = base.pipeline.pending
            kind = f"{h.sender}->{h.receiver}"
            handoffs[h.sender] += 1
            passed = [_continue(base.fork(seed=s), "pass") for s in range(seeds)]
            retried = [_continue(base.fork(seed=s), BARE_RETRY) for s in range(seeds)]
            diffs[h.sender].extend(r - p for r, p in zip(retried, passed) if r is not None and p is not None)
            failed_pairs += sum(r is None or p is None for r, p in zip(retried, passed))
            if options:
                for template in HANDOFF[1:]:
                    action = template.fill(base.task.question, base.pipeline.transcript)
                    outcome = _mean(_continue(base.fork(seed=s), action) for s in range(seeds))
                    if outcome is not None and _mean(passed) is not None:
                        landscape[(kind, template.name)].append(outcome - _mean(passed))
            _, _, terminated, truncated, _ = env.step("pass")
            if terminated or truncated:  # a truncation (a service failure) ends the episode too
                break
        if progress:
            print(f"\r{i + 1}/{len(ids)} tasks", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    roles = {}
    for role in handoffs:
        a = np.asarray(diffs[role])
        if not a.size:  # every pair of this role failed on a service: nothing measured
            roles[role] = {
                "handoffs": handoffs[role],
                "pairs": 0,
                "changes": float("nan"),
                "raises": float("nan"),
                "lowers": float("nan"),
                "mean_delta_f1": float("nan"),
            }
            continue
        roles[role] = {
            "handoffs": handoffs[role],
            "pairs": int(a.size),
            "changes": float((a != 0).mean()),
            "raises": float((a > 0).mean()),
            "lowers": float((a < 0).mean()),
            "mean_delta_f1": float(100 * a.mean()),
        }
    report: dict[str, Any] = {
        "split": split,
        "tasks": len(ids),
        "seeds": seeds,
        "executor": executor,
        "max_turns": max_turns,
        "roles": roles,
        "failed_pairs": failed_pairs,
        "wall_s": round(time.time() - start, 1),
    }
    if options:
        report["landscape"] = {
            f"{k}|{o}": {
                "n": len(v),
                "mean_delta_f1": float(100 * np.mean(v)),
                "helps": float(np.mean(np.asarray(v) > 0)),
                "hurts": float(np.mean(np.asarray(v) < 0)),
            }
            for (k, o), v in sorted(landscape.items())
        }
    return report


def torch_threads() -> None:
    try:
        import torch  # noqa: F401 - the ImportError below is the check

        cpu_thread_default()
    except ImportError:  # pragma: no cover
        pass


def render(report: dict[str, Any]) -> str:
    from steer_envs.executors.pipeline import ROLES

    lines = [
        f"Counterfactual credit per role: split `{report['split']}`, {report['tasks']} tasks, executor "
        f"`{report['executor']}`, {report['seeds']} continuation seeds per branch, max {report['max_turns']} "
        "agent turns.",
        "A role's message *matters* when rejecting it bare (its sender redoes the turn) changes the final F1.",
        "",
        "| role | hand-offs | retry changes F1 | raises | lowers | mean ΔF1 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for role in ROLES:
        r = report["roles"].get(role)
        if r:
            lines.append(
                f"| {role} | {r['handoffs']} | {100 * r['changes']:.1f}% | {100 * r['raises']:.1f}% | "
                f"{100 * r['lowers']:.1f}% | {r['mean_delta_f1']:+.2f} |"
            )
    if "landscape" in report:
        lines += [
            "",
            "Intervention landscape (mean ΔF1 x100 of one intervention vs pass, by hand-off kind; share of "
            "hand-offs where it helps / hurts):",
            "",
            "| hand-off | option | n | mean ΔF1 | helps | hurts |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for key, v in report["landscape"].items():
            kind, option = key.split("|")
            lines.append(
                f"| {kind} | {option} | {v['n']} | {v['mean_delta_f1']:+.2f} | {100 * v['helps']:.0f}% | "
                f"{100 * v['hurts']:.0f}% |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.handoff_credit.run", description=__doc__.split("\n\n")[0])
    add_protocol_arguments(parser, include=("split",), defaults={"split": "dev"})
    parser.add_argument("--per-benchmark", type=int, default=10, help="first N tasks of each benchmark")
    parser.add_argument("--seeds", type=int, default=4, help="continuations per branch (common random numbers)")
    parser.add_argument("--options", action="store_true", help="also measure every catalogue intervention")
    add_protocol_arguments(
        parser,
        include=("executor", "max_turns", "benchmarks"),
        defaults={"max_turns": 30},
        overrides={"benchmarks": {"nargs": "*"}},
    )
    parser.add_argument("--out", default="runs/handoff_credit")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK['per_benchmark']} task of {' and '.join(QUICK['benchmarks'])}, {QUICK['seeds']} "
        "continuations per branch: a smoke run",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.per_benchmark, args.seeds, args.benchmarks = QUICK["per_benchmark"], QUICK["seeds"], QUICK["benchmarks"]
    report = credit(
        args.split, args.per_benchmark, args.seeds, args.options, args.executor, args.max_turns, args.benchmarks
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "credit.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    text = render(report)
    (out / "credit.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {out}/credit.md ({report['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
