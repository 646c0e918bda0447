"""``steer-envs train actguide --out RUN_DIR [--config FILE] [--variant NAME] [--resume]`` and
``steer-envs barrier --model RUN_DIR|initial --out DIR``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from steer_envs.cli.common import add_data_dir, add_protocol_arguments
from steer_envs.errors import SteerEnvsError

from ..configio import add_log_with_argument, with_log_with

HELP = "train the search agent with ACTGUIDE-RL (guided GRPO on GuidedSearch-v0) or one of its baselines"
BARRIER_HELP = "barrier diagnostics of a GuidedSearch policy: prefix-level Pass@K, M_t, κ_t, B_k, ΔLogit (table + plot)"


def configure(parser: argparse.ArgumentParser) -> None:
    from .config import VARIANTS

    parser.add_argument(
        "--out", required=True, help="run folder: config.json, log.jsonl, checkpoint.pt/.json, model.pt/.json"
    )
    parser.add_argument(
        "--config", default=None, help="a .json or .toml file of ActGuideConfig keys (budget, group_size, ...)"
    )
    parser.add_argument(
        "--variant",
        default="actguide",
        choices=sorted(VARIANTS),
        help="method or ablation applied on top of the config (default actguide; zero_rl = GRPO without guidance)",
    )
    parser.add_argument("--budget", type=int, default=None, help="rollout budget (unguided + probes + guided)")
    parser.add_argument("--seed", type=int, default=None, help="training seed")
    parser.add_argument(
        "--init-from",
        default=None,
        help="run folder of a trained learner to start from (the initial policy and the KL reference)",
    )
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    add_data_dir(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_log_with_argument(parser)


def resolve_config(args: argparse.Namespace):
    from ..trainer_base import read_run_config
    from .config import ActGuideConfig
    from .trainer import CONFIG_FILE

    out = Path(args.out)
    if args.config:
        config = ActGuideConfig.load(args.config).variant(args.variant)
    elif args.resume and (out / CONFIG_FILE).is_file():  # the run's own config; only --log-with may change it
        saved = ActGuideConfig.from_dict(read_run_config(out), where=str(out / CONFIG_FILE))
        return with_log_with(saved, args)
    else:
        config = ActGuideConfig().variant(args.variant)
    if args.budget is not None:
        config.budget = args.budget
    if args.seed is not None:
        config.seed = args.seed
    if args.init_from:
        config.init_from = str(args.init_from)
    if args.data_dir:
        config.data_dir = args.data_dir
    return with_log_with(config, args)


def run(args: argparse.Namespace) -> int:
    from ..trainer_base import end_processes, leave_launched_process
    from .trainer import PROGRESS_FILE, ActGuideTrainer

    out = Path(args.out)
    if args.resume and not (out / PROGRESS_FILE).is_file():
        raise SteerEnvsError(f"--resume: no checkpoint in {str(out)!r}; start the run without --resume")
    config = resolve_config(args)
    result = ActGuideTrainer(config, out, resume=args.resume, progress=not args.no_progress).run()
    end_processes()  # under accelerate launch: every process ends its process group before it exits
    last = result.log[-1] if result.log else {}
    print(
        f"trained {result.iterations} iterations ({result.budget_used} rollouts) in {result.wall_s:.0f} s; last "
        f"iteration: unguided success {last.get('unguided_success', float('nan')):.3f}, hard groups "
        f"{last.get('hard_groups', 0)}. Model: {out / 'model.pt'}; diagnose it with `steer-envs barrier --model {out}`"
    )
    return leave_launched_process(0)  # a launched process leaves without the teardown that could abort


# -- barrier ------------------------------------------------------------------------------------------------------
def configure_barrier(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        nargs="+",
        default=["initial"],
        help="run folder(s) of trained learners, or 'initial' (the untrained policy); default initial",
    )
    parser.add_argument("--out", required=True, help="folder for barrier.json, barrier.md, barrier.png")
    add_protocol_arguments(
        parser,
        include=("split",),
        defaults={"split": "dev"},
        overrides={"split": {"choices": ("train", "dev", "test")}},
    )
    parser.add_argument("--tasks-per-benchmark", type=int, default=10)
    parser.add_argument("--K", type=int, default=8, help="rollouts per Pass@K estimate (default 8)")
    parser.add_argument("--max-k", type=int, default=4, help="largest guidance k (default 4)")
    parser.add_argument("--horizon", type=int, default=4, help="steps of M_t (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    add_data_dir(parser)
    parser.add_argument(
        "--regions",
        action="store_true",
        help="instead of the diagnostics, split the tasks into in-region / barrier / out of reach "
        "(regions.json, regions.md per model; agents/actguide/regions.py)",
    )
    parser.add_argument(
        "--K-unguided",
        type=int,
        default=32,
        help="with --regions: unguided rollouts before a task counts as unreachable (default 32)",
    )
    parser.add_argument(
        "--K-guided", type=int, default=8, help="with --regions: rollouts per hint size k = 1..--max-k (default 8)"
    )
    parser.add_argument(
        "--task-family",
        default=None,
        help="diagnose the tasks of this synthetic task family (steer_envs.task_families, e.g. skill_chain) "
        "instead of the model's benchmarks",
    )
    parser.add_argument(
        "--regions-file",
        default=None,
        help="a regions.json of these tasks (`--regions` of the base): diagnose only the tasks of "
        "--region in it, e.g. the barrier group before and after training",
    )
    parser.add_argument(
        "--region", default="barrier", help="with --regions-file: comma-separated regions to keep (default barrier)"
    )


def run_barrier(args: argparse.Namespace) -> int:
    from steer_envs.envs.admissible import FEATURE_NAMES  # noqa: F401  (fail fast on a broken install)

    from .barrier import barrier_plot, barrier_table, diagnose
    from .config import ActGuideConfig
    from .learners import build_learner
    from .tasks import make_env, sample_tasks
    from .trainer import load_learner

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    reports = []
    for spec in args.model:
        if spec == "initial":
            config = ActGuideConfig(data_dir=args.data_dir)
            learner, label = build_learner(config.learner, config.learner_args, config.seed), "initial"
        else:
            learner, meta = load_learner(spec)
            config = ActGuideConfig.from_dict(meta["config"], where=str(spec))
            if args.data_dir:
                config.data_dir = args.data_dir
            label = Path(spec).name
        if args.task_family:
            from steer_envs.task_families import get_task_family

            config.task_family = args.task_family
            config.benchmarks = [get_task_family(args.task_family).benchmark]
        env = make_env(config, split=args.split)
        ids = sample_tasks(env, args.tasks_per_benchmark, args.seed)
        if args.regions_file:
            ids = tasks_of_regions(ids, args)
        if args.regions:
            _write_model_regions(args, learner, env, ids, label, out / label if len(args.model) > 1 else out)
            continue
        reports.append(diagnose(learner, env, ids, label, args.K, args.max_k, args.horizon, args.seed))
    if args.regions:
        return 0
    table = barrier_table(reports)
    (out / "barrier.md").write_text(table + "\n")
    (out / "barrier.json").write_text(json.dumps([r.to_dict() for r in reports], indent=2) + "\n")
    barrier_plot(reports, out / "barrier.png")
    print(table)
    print(f"\nwritten: {out / 'barrier.md'}, {out / 'barrier.json'}, {out / 'barrier.png'}")
    return 0


def tasks_of_regions(ids: list[str], args: argparse.Namespace) -> list[str]:
    """The tasks of ``ids`` in the regions ``--region`` of ``--regions-file`` (:func:`tasks.tasks_in_regions`)."""
    from .config import POOL_REGIONS, region_names
    from .tasks import tasks_in_regions

    keep = region_names(args.region)
    if not keep or not set(keep) <= set(POOL_REGIONS):
        raise SteerEnvsError(
            f"--region takes regions among {', '.join(POOL_REGIONS)} (comma-separated; got {args.region!r})"
        )
    return tasks_in_regions(
        ids,
        args.regions_file,
        keep,
        "sampled",
        f"--split {args.split} --tasks-per-benchmark {args.tasks_per_benchmark} --seed {args.seed}",
        "keep more regions (--region)",
    )


def _write_model_regions(args: argparse.Namespace, learner, env, ids: list[str], label: str, out: Path) -> None:
    from .regions import RegionConfig, classify, region_table, write_regions

    config = RegionConfig(k_unguided=args.K_unguided, k_guided=args.K_guided, max_k=args.max_k)
    regions = classify(learner, env, ids, config, args.seed)
    json_path, md_path = write_regions(regions, config, out, label)
    print(f"{label} on {args.split}:\n{region_table(regions, config)}\n\nwritten: {json_path}, {md_path}")


def resume(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """The same command with ``--resume`` once progress was saved (before that, the same command restarts)."""
    from .trainer import PROGRESS_FILE

    if (Path(args.out) / PROGRESS_FILE).is_file() and "--resume" not in argv:
        return [*argv, "--resume"]
    return list(argv)


def register(register_train_target) -> None:
    from steer_envs.cli.registry import Command as TrainTarget  # agents.cli.TrainTarget (no import back up)

    register_train_target(TrainTarget("actguide", HELP, configure, run, resume=resume))
