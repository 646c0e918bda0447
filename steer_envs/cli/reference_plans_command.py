"""``steer-envs reference-plans coverage``: how many tasks of each benchmark have ACTGUIDE reference plans, and from
where (recorded rollouts, the tasks' gold structure)."""

from __future__ import annotations

import argparse

from ..data import BENCHMARKS, SPLITS
from ..reference_plans.store import SOURCE_KINDS, load_reference_plans
from .common import add_data_dir, add_protocol_arguments


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="reference_plans_command", required=True, metavar="{coverage}")
    cov = sub.add_parser("coverage", help="reference plans per benchmark: rollouts, gold structure, any")
    add_protocol_arguments(
        cov,
        include=("benchmarks", "split"),
        defaults={"benchmarks": list(BENCHMARKS), "split": "all"},
        overrides={
            "benchmarks": {"choices": BENCHMARKS, "metavar": "B"},
            "split": {"choices": [*SPLITS, "all"], "help": "task split: train, dev, test or all (default all)"},
        },
    )
    cov.add_argument(
        "--sources",
        nargs="+",
        default=list(SOURCE_KINDS),
        choices=SOURCE_KINDS,
        help="source kinds to load (default: rollout gold)",
    )
    add_data_dir(cov)


def run(args: argparse.Namespace) -> int:
    split = None if args.split == "all" else args.split
    data = load_reference_plans(args.benchmarks, split, args.data_dir, sources=args.sources)
    rows = data.coverage(args.benchmarks)
    header = f"{'benchmark':<17}{'tasks':>7}{'rollout':>9}{'gold':>7}{'any':>7}{'share':>8}{'mean L':>8}  sources"
    print(f"reference plans, split {args.split}")
    print(header)
    print("-" * len(header))
    total = {"tasks": 0, "rollout": 0, "gold": 0, "any": 0}
    for r in rows:
        for key in total:
            total[key] += r[key]
        share = r["any"] / r["tasks"] if r["tasks"] else 0.0
        sources = ", ".join(f"{k} {v}" for k, v in r["sources"].items())
        print(
            f"{r['benchmark']:<17}{r['tasks']:>7}{r['rollout']:>9}{r['gold']:>7}{r['any']:>7}{share:>8.0%}"
            f"{r['mean_length']:>8.2f}  {sources}"
        )
    share = total["any"] / total["tasks"] if total["tasks"] else 0.0
    print(f"{'all':<17}{total['tasks']:>7}{total['rollout']:>9}{total['gold']:>7}{total['any']:>7}{share:>8.0%}")
    return 0


#: ACTGUIDE's reference plans under their own name ("guidance" means a steering note; :mod:`steer_envs.reference_plans`)
