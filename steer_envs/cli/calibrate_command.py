"""``steer-envs calibrate``: compare a simulator profile with real recorded rollouts, by benchmark."""

from __future__ import annotations

import argparse
import json

from .common import add_data_dir, add_protocol_arguments


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile", default="sim:default", help="executor spec of the simulator (sim:<profile|file.json>)"
    )
    parser.add_argument(
        "--source",
        nargs="+",
        default=None,
        help="recorded rollouts to compare with (trajectories/<source>); default: the ones the shipped "
        "profile was calibrated against (default: search_r1_base, r1searcher: r1_searcher_qwen, "
        "r1searcher_llama: r1_searcher_llama)",
    )
    parser.add_argument(
        "--splits",
        nargs="+",
        default=None,
        choices=("train", "dev", "test"),
        help="only recordings of tasks in these splits (profiles are fitted on train and dev)",
    )
    parser.add_argument("--limit", type=int, default=0, help="rollouts per benchmark (evenly spaced; 0 = all)")
    add_protocol_arguments(parser, include=("max_turns",))  # the simulator's turn budget
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    add_data_dir(parser)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..errors import SteerEnvsError
    from ..executors.sim.calibration import PROFILE_SOURCES, TOLERANCE, calibrate, format_table

    if not args.profile.startswith("sim:"):
        raise SteerEnvsError(
            f"--profile must be a simulator spec like sim:default or sim:/path/profile.json, got {args.profile!r}"
        )
    name = args.profile.partition(":")[2] or "default"
    sources = args.source or list(PROFILE_SOURCES.get(name, ("search_r1_base",)))
    rows = []
    for source in sources:
        found = calibrate(
            args.profile, source, args.limit or None, args.max_turns, args.data_dir, args.seed, splits=args.splits
        )
        print(format_table(found, args.profile, source) + "\n")
        rows.extend(found)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "profile": args.profile,
                    "sources": sources,
                    "splits": args.splits,
                    "tolerance": asdict(TOLERANCE),
                    "rows": [
                        {
                            "source": r.source,
                            "benchmark": r.benchmark,
                            "real": asdict(r.real),
                            "sim": asdict(r.sim),
                            "within": r.within(),
                        }
                        for r in rows
                    ],
                },
                fh,
                indent=2,
            )
    return 0 if all(r.within() for r in rows) else 1
