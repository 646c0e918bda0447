"""Command-line options of the rollout pool, shared by ``train`` and ``eval``."""

from __future__ import annotations

import argparse

from .base import POOL_KINDS, PoolConfig


def add_pool_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("rollout pool (where the expensive loops run; results do not depend on it)")
    group.add_argument(
        "--pool",
        choices=POOL_KINDS,
        default=None,
        help="auto (default: greenlets for an openai: executor, else local), local (this process, one episode at "
        "a time), processes (worker processes on this machine), ray, greenlets (many episodes in flight on "
        "one thread of this process) or threads (many episodes in flight on threads of this process)",
    )
    group.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker count (default 1 for local, 2 for processes; ray: one per cluster CPU; greenlets and threads: "
        "the model backend's in-flight bound, e.g. openai:...?max_in_flight=64)",
    )
    group.add_argument("--ray", action="store_true", help="run the pool on Ray (a local Ray started for the run)")
    group.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="join an existing Ray cluster, e.g. ray://HEAD:10001 or HEAD:6379 (implies --ray)",
    )
    group.add_argument(
        "--worker-cpus",
        type=float,
        default=1.0,
        metavar="C",
        help="CPUs each Ray worker reserves (default 1; e.g. 0.25 for an LLM executor that mostly waits)",
    )


def pool_config_from_args(args: argparse.Namespace) -> PoolConfig:
    kind = args.pool or ("ray" if (args.ray or args.ray_address) else None)
    if kind is None:
        kind = "processes" if (args.workers or 1) > 1 else "auto"
    if (args.ray or args.ray_address) and kind != "ray":
        from ..errors import SteerEnvsError

        raise SteerEnvsError(f"--ray/--ray-address and --pool {kind} contradict each other; drop one")
    defaults = {"auto": 1, "greenlets": 0, "local": 1, "processes": 2, "ray": 0, "threads": 0}
    workers = defaults[kind] if args.workers is None else args.workers
    return PoolConfig(kind=kind, workers=workers, ray_address=args.ray_address, cpus_per_worker=args.worker_cpus)
