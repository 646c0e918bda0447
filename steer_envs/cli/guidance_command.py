"""``steer-envs reference-plans coverage`` (old name ``steer-envs guidance coverage``): how many tasks of each benchmark
have ACTGUIDE reference plans (reference action sequences), and from where."""
from __future__ import annotations

import argparse

from ..data import BENCHMARKS, SPLITS
from ..guidance.store import SOURCE_KINDS, load_action_data
from .common import add_data_dir, add_protocol_arguments
from .registry import Command, register_command


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="guidance_command", required=True, metavar="{coverage}")
    cov = sub.add_parser("coverage", help="reference action sequences per benchmark: rollouts, gold structure, any")
    add_protocol_arguments(cov, include=("benchmarks", "split"),
                           defaults={"benchmarks": list(BENCHMARKS), "split": "all"},
                           overrides={"benchmarks": {"choices": BENCHMARKS, "metavar": "B"},
                                      "split": {"choices": [*SPLITS, "all"],
                                                "help": "task split: train, dev, test or all (default all)"}})
    cov.add_argument("--sources", nargs="+", default=list(SOURCE_KINDS), choices=SOURCE_KINDS,
                     help="source kinds to load (default: rollout gold)")
    add_data_dir(cov)


def _run(args: argparse.Namespace) -> int:
    split = None if args.split == "all" else args.split
    data = load_action_data(args.benchmarks, split, args.data_dir, sources=args.sources)
    rows = data.coverage(args.benchmarks)
    header = f"{'benchmark':<17}{'tasks':>7}{'rollout':>9}{'gold':>7}{'any':>7}{'share':>8}{'mean L':>8}  sources"
    print(f"reference action sequences, split {args.split}")
    print(header)
    print("-" * len(header))
    total = {"tasks": 0, "rollout": 0, "gold": 0, "any": 0}
    for r in rows:
        for key in total:
            total[key] += r[key]
        share = r["any"] / r["tasks"] if r["tasks"] else 0.0
        sources = ", ".join(f"{k} {v}" for k, v in r["sources"].items())
        print(f"{r['benchmark']:<17}{r['tasks']:>7}{r['rollout']:>9}{r['gold']:>7}{r['any']:>7}{share:>8.0%}"
              f"{r['mean_length']:>8.2f}  {sources}")
    share = total["any"] / total["tasks"] if total["tasks"] else 0.0
    print(f"{'all':<17}{total['tasks']:>7}{total['rollout']:>9}{total['gold']:>7}{total['any']:>7}{share:>8.0%}")
    return 0


def _run_old_name(args: argparse.Namespace) -> int:
    import warnings

    warnings.warn("`steer-envs guidance` is deprecated; use `steer-envs reference-plans` (the same command)",
                  FutureWarning, stacklevel=2)  # FutureWarning: shown to command-line users by default
    return _run(args)


#: ACTGUIDE's reference plans under their own name ("guidance" alone means a steering note;
#: :mod:`steer_envs.reference_plans`); ``guidance`` is the old, deprecated name of the same command
register_command(Command("reference-plans", "ACTGUIDE-RL reference plans: `reference-plans coverage` per benchmark",
                         _configure, _run))
register_command(Command("guidance", "deprecated name of `reference-plans`", _configure, _run_old_name))
