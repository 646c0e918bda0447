"""``steer-envs train steering --executor sim:default --out RUN_DIR [--config FILE] [--resume]``."""

from __future__ import annotations

import argparse
from pathlib import Path

from steer_envs.cli.common import add_protocol_arguments, protocol_kwargs
from steer_envs.errors import SteerEnvsError
from steer_envs.rollouts import add_pool_arguments, pool_config_from_args

from ..configio import add_log_with_argument, with_log_with

HELP = "train the steering agent (fast path + slow path) with the paper's RL algorithm"


def configure(parser: argparse.ArgumentParser) -> None:
    add_protocol_arguments(
        parser,
        include=("executor", "data_dir"),
        defaults={"executor": None},
        overrides={"executor": {"help": "executor spec (default: the config's, sim:default)"}},
    )
    parser.add_argument("--out", required=True, help="run folder: config, log.jsonl, checkpoint.pt, model.pt")
    parser.add_argument(
        "--config",
        default=None,
        help="a .json or .toml file of SteeringConfig keys (m, k, eps_sel, G, N, tau, lr, cost, ...)",
    )
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_log_with_argument(parser)
    add_pool_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..trainer_base import end_processes, leave_launched_process, read_run_config
    from .config import SteeringConfig
    from .trainer import CONFIG_FILE, SteeringTrainer

    out = Path(args.out)
    if args.config:
        config = SteeringConfig.load(args.config)
    elif args.resume and (out / CONFIG_FILE).is_file():
        config = SteeringConfig.from_dict(read_run_config(out), where=str(out / CONFIG_FILE))
    else:
        config = SteeringConfig()
    for name, value in protocol_kwargs(args, drop_none=True).items():  # a flag given replaces the config's value
        setattr(config, name, value)
    config = with_log_with(config, args)
    if args.resume and not (out / "checkpoint.pt").is_file():
        raise SteerEnvsError(f"--resume: no checkpoint in {str(out)!r}; start the run without --resume")
    pool = pool_config_from_args(args)
    result = SteeringTrainer(config, out, resume=args.resume, progress=not args.no_progress, pool=pool).run()
    end_processes()  # under accelerate launch: every process ends its process group before it exits
    last = result.log[-1] if result.log else {}
    print(
        f"trained {result.rounds} rounds in {result.wall_s:.0f} s; "
        f"last round: loss {last.get('loss', float('nan')):.3f}, "
        f"mean q {last.get('mean_q', float('nan')):.3f}. Model: {out / 'model.pt'}; "
        f"fast-path Spearman on dev: `python -m agents.steering.evaluate {out}`; "
        "compare with other methods: `steer-envs compare`"
    )
    return leave_launched_process(0)  # a launched process leaves without the teardown that could abort


def resume(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """The same command with ``--resume`` once a checkpoint exists (before that, the same command restarts)."""
    if (Path(args.out) / "checkpoint.pt").is_file() and "--resume" not in argv:
        return [*argv, "--resume"]
    return list(argv)


def register(register_train_target) -> None:
    from steer_envs.cli.registry import Command as TrainTarget  # agents.cli.TrainTarget (no import back up)

    register_train_target(TrainTarget("steering", HELP, configure, run, resume=resume))
