"""CLI commands contributed by ``benchmarks``: ``steer-envs eval``, ``steer-envs report`` (a run folder or a results
page), ``steer-envs demo``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from steer_envs.cli.common import add_data_dir, add_protocol_arguments, protocol_kwargs
from steer_envs.cli.registry import Command, register_command, rerun
from steer_envs.data import BENCHMARKS, SPLITS
from steer_envs.rollouts import add_pool_arguments, pool_config_from_args

#: the env protocol's fields an evaluation command takes as flags: all but ``metric`` (the tables score F1), so a
#: new protocol field becomes a flag of eval, sweep, sensitivity, compare and headroom
EVAL_PROTOCOL_EXCLUDE = ("metric",)


def _add_protocol(
    parser: argparse.ArgumentParser, split: str | None = "test", seeds: int | None = 3, limit: int | None = 0
) -> None:
    """The env protocol's flags; a default of None leaves the value to a named comparison protocol."""
    add_protocol_arguments(
        parser,
        exclude=EVAL_PROTOCOL_EXCLUDE,
        defaults={"benchmarks": list(BENCHMARKS), "split": split},
        overrides={"benchmarks": {"metavar": "B"}, "split": {"choices": SPLITS}},
    )
    given = "the protocol's" if seeds is None else seeds
    parser.add_argument("--seeds", type=int, default=seeds, help=f"seeds per task (default {given})")
    parser.add_argument(
        "--limit",
        type=int,
        default=limit,
        help="first N tasks of each benchmark (0: all; default "
        + ("the protocol's" if limit is None else str(limit))
        + ")",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _config(args: argparse.Namespace):
    from .harness.config import EvalConfig

    return EvalConfig(seeds=args.seeds, limit=args.limit, skip=getattr(args, "skip", 0), **protocol_kwargs(args))


# -- eval --------------------------------------------------------------------------------------------------------
#: the eval parser's epilog: :class:`_EvalHelpFormatter` writes every method's options in its place
_METHODS_EPILOG = "methods and their options (NAME:key=value,...):"


class _EvalHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Lists every method and its options (default, type, doc) under the eval flags. Built only when the help is
    shown: describing the RL methods' options imports their builders (and torch)."""

    def add_text(self, text: str | None) -> None:
        if text == _METHODS_EPILOG:
            from baselines.registry import methods_help

            text = f"{_METHODS_EPILOG}\n\n{methods_help()}"
        super().add_text(text)


def _configure_eval(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = _EvalHelpFormatter
    parser.epilog = _METHODS_EPILOG
    parser.add_argument(
        "--method",
        nargs="+",
        default=[],
        metavar="M",
        help="method spec(s), NAME or NAME:key=value,... (the options of each method are listed "
        "below; a spec is checked before any work: option names, types and ranges)",
    )
    parser.add_argument("--out", help="run folder (created; reused to resume or add methods)")
    parser.add_argument(
        "--list-methods",
        action="store_true",
        help="describe every method and its options (default, type, doc) and exit",
    )
    _add_protocol(parser)
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="pass over the first N tasks of each benchmark, then take --limit (default 0); e.g. "
        "--skip 40 confirms on tasks no --limit 40 run has used",
    )
    add_pool_arguments(parser)


def _run_eval(args: argparse.Namespace) -> int:
    from baselines.registry import methods_help, parse_method
    from steer_envs.errors import SteerEnvsError

    from .harness.runfolder import RunFolder
    from .harness.runner import evaluate_all, nothing_scored

    if args.list_methods:
        print(methods_help())
        return 0
    if not args.method or not args.out:
        raise SteerEnvsError("eval needs --method M [M ...] and --out RUN_DIR (or --list-methods)")
    specs = [parse_method(s).label for s in args.method]  # validate every name before any work
    folder = RunFolder(args.out, _config(args))
    _, summaries, table = evaluate_all(folder, specs, progress=not args.no_progress, pool=pool_config_from_args(args))
    print(table)
    print(f"run folder: {folder.root} (episodes/, metrics.json, table.md)")
    why = nothing_scored(folder, summaries)
    if why:
        print(f"steer-envs eval: {why}", file=sys.stderr)
        return 1
    return 0


# -- report ------------------------------------------------------------------------------------------------------
def _configure_report(parser: argparse.ArgumentParser) -> None:
    from .pages import page_names

    parser.add_argument(
        "run_dir",
        metavar="RUN_DIR|PAGE",
        help="a run folder written by eval / demo / sweep (writes its report.md), or a results page "
        f"to rebuild from its run folders: {', '.join(page_names())}",
    )
    parser.add_argument("--out", help="PAGE only: the page's run folder(s) (default: the one its generator writes)")
    parser.add_argument("--doc", help="PAGE only: where to write the page (default: docs/PAGE.md)")
    parser.add_argument(
        "--actions",
        action="store_true",
        help="RUN_DIR only: print what each method did (share of episodes taking each action at each decision); "
        "writes nothing",
    )


def _run_report(args: argparse.Namespace) -> int:
    from steer_envs.errors import SteerEnvsError

    from .harness.actions import folder_actions
    from .harness.report import write_report
    from .harness.runfolder import RunFolder
    from .pages import get_page, page_names

    if args.run_dir in page_names() and not Path(args.run_dir).is_dir():
        doc = get_page(args.run_dir).build(args.out, args.doc)
        print(f"wrote {doc}")
        return 0
    if args.out or args.doc:
        raise SteerEnvsError(
            f"--out/--doc go with a results page ({', '.join(page_names())}); {args.run_dir!r} is read as a run folder"
        )
    if args.actions:
        print(folder_actions(RunFolder(args.run_dir)))
        return 0
    path = write_report(args.run_dir)
    print(path.read_text(encoding="utf-8"))
    print(f"wrote {path} and plots in {path.parent / 'plots'}")
    return 0


# -- sweep -------------------------------------------------------------------------------------------------------
def _configure_sweep(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sweep", required=True, metavar="{tau,transfer}")
    tau = sub.add_parser("tau", help="τ sweep of a trained steerer: interventions/task vs F1 gain")
    tau.add_argument("--method", default="steering_rl", help="a method with a tau option (default steering_rl)")
    tau.add_argument("--taus", nargs="+", type=float, default=[0.1, 0.3, 0.5, 0.7, 0.9])
    tau.add_argument("--out", required=True)
    _add_protocol(tau)
    transfer = sub.add_parser("transfer", help="train on one executor, evaluate on others without retraining")
    transfer.add_argument("--method", nargs="+", default=["steering_rl"])
    transfer.add_argument("--train-executor", default="sim:default")
    transfer.add_argument("--executors", nargs="+", default=["sim:default", "sim:weak", "sim:strong", "sim:loopy"])
    transfer.add_argument("--out", required=True)
    _add_protocol(transfer)


def _run_sweep(args: argparse.Namespace) -> int:
    from .harness import sweeps

    if args.sweep == "tau":
        text = sweeps.tau_sweep(args.out, _config(args), args.method, args.taus, progress=not args.no_progress)
    else:
        text = sweeps.transfer_sweep(
            args.out, _config(args), args.method, args.train_executor, args.executors, progress=not args.no_progress
        )
    print(text)
    return 0


# -- sensitivity -------------------------------------------------------------------------------------------------
DEFAULT_AXES = ("compliance=0.6,0.85,1.0", "second_guess+second_guess_search=x0.5,x1,x1.5")


def _configure_sensitivity(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--method", nargs="+", required=True, metavar="M", help="methods (trained once, on --executor)")
    parser.add_argument(
        "--axis",
        nargs="+",
        default=list(DEFAULT_AXES),
        metavar="KEY=V1,V2",
        help="response assumptions to vary (profile keys); KEY1+KEY2=x0.5,x1 scales keys together "
        f"(default: {' '.join(DEFAULT_AXES)})",
    )
    parser.add_argument("--out", required=True, help="folder: one run folder per grid point, sensitivity.md")
    _add_protocol(parser)


def _run_sensitivity(args: argparse.Namespace) -> int:
    from .harness.sensitivity import parse_axis, sensitivity_sweep

    print(
        sensitivity_sweep(
            args.out, _config(args), args.method, [parse_axis(a) for a in args.axis], progress=not args.no_progress
        )
    )
    return 0


# -- compare -----------------------------------------------------------------------------------------------------
def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of one rate-matched comparison (``steer-envs compare`` and the results generator): a named
    protocol, the contenders that join or replace its rows, and any protocol field to override (default: the
    protocol's)."""
    from .harness.protocols import PROTOCOLS

    parser.add_argument(
        "--protocol",
        default="standard",
        choices=list(PROTOCOLS),
        help="the comparison's named setting (splits, task counts, seeds, budget, rate target, built-in rows): "
        + "; ".join(f"{p.name}: {p.description}" for p in PROTOCOLS.values()),
    )
    parser.add_argument(
        "--method",
        action="append",
        default=[],
        metavar="SPEC",
        help="a contender (repeatable; a built-in or an installed plugin method): a spec of a method already in "
        "the protocol replaces its row (e.g. steering_rl:config=FILE.toml), any other joins and becomes the row "
        "paired with every other",
    )
    parser.add_argument(
        "--without", action="append", default=[], metavar="NAME", help="drop a built-in contender (repeatable)"
    )
    parser.add_argument(
        "--train-seeds", type=int, help="training seeds per learned method (default: the protocol's, 3 except demo's 1)"
    )
    parser.add_argument("--target", type=float, help="interventions per task every knob is set to on dev")
    parser.add_argument("--dev-limit", type=int, help="dev tasks per benchmark for choosing (0: all)")
    parser.add_argument("--dev-seeds", type=int, help="seeds per dev task for choosing")
    parser.add_argument("--max-probes", type=int, help="dev evaluations per bisection")
    parser.add_argument(
        "--knob-grid",
        action="append",
        default=[],
        metavar="NAME=V,V,...",
        help="the values a method's training-time rate knob walks first (each a training run), e.g. "
        "sb3_ppo=0.03,0.1,0.3,1 (default: the method's own grid)",
    )
    parser.add_argument("--curve-seeds", type=int, help="seeds per task for the rate curves")
    parser.add_argument("--no-curves", action="store_true", help="skip the rate curves")
    parser.add_argument(
        "--spearman-tasks", type=int, help="held-out tasks per benchmark for the fast path's Spearman (0: skip)"
    )
    parser.add_argument(
        "--context-rows",
        nargs="*",
        metavar="SPEC",
        help="methods shown beside the contenders without a knob (e.g. a fixed rule, oracle)",
    )
    parser.add_argument(
        "--own-rate-rows",
        nargs="*",
        metavar="NAME",
        help="methods run at their own rate with the budget row's trainer options and --train-seeds (e.g. "
        "planning_rl verification_rl)",
    )


def _knob_grids(items: list[str]) -> dict[str, tuple[str, ...]] | None:
    from steer_envs.errors import SteerEnvsError

    grids = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not values:
            raise SteerEnvsError(f"--knob-grid {item!r}: write NAME=V,V,... (e.g. sb3_ppo=0.03,0.1,0.3,1)")
        grids[name.strip()] = tuple(v.strip() for v in values.split(","))
    return grids or None


#: the protocol fields a comparison plan (and a headroom ladder) takes, read back with protocol_kwargs by name
#: (both refuse a nonzero intervention_cost, and metric is not a flag: both score F1)
COMPARE_PROTOCOL = ("executor", "benchmarks", "split", "max_turns", "data_dir")


def compare_plan(args: argparse.Namespace, out, executor: str | None = None):
    from steer_envs.errors import SteerEnvsError

    from .harness.protocols import plan_for

    if args.intervention_cost:
        raise SteerEnvsError(
            "a comparison scores F1 without an intervention cost (rates are matched on dev instead); "
            "drop --intervention-cost"
        )
    protocol = protocol_kwargs(args, COMPARE_PROTOCOL)
    if executor:
        protocol["executor"] = executor
    return plan_for(
        args.protocol,
        out,
        methods=args.method,
        without=args.without,
        **protocol,
        train_seeds=args.train_seeds,
        seeds=args.seeds,
        limit=args.limit,
        dev_seeds=args.dev_seeds,
        dev_limit=args.dev_limit,
        target=args.target,
        max_probes=args.max_probes,
        knob_grids=_knob_grids(args.knob_grid),
        curve_seeds=args.curve_seeds,
        curves=False if args.no_curves else None,
        spearman_tasks=args.spearman_tasks,
        context_rows=None if args.context_rows is None else tuple(args.context_rows),
        own_rate_rows=None if args.own_rate_rows is None else tuple(args.own_rate_rows),
        progress=not args.no_progress,
        pool=pool_config_from_args(args),
    )


def _configure_compare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="folder: dev/, <split>/, checkpoints/, comparison.md")
    add_compare_arguments(parser)
    _add_protocol(parser, split=None, seeds=None, limit=None)
    add_pool_arguments(parser)


def _run_compare(args: argparse.Namespace) -> int:
    from .harness.comparison import Comparison
    from .harness.provenance import portable_command
    from .harness.results_summary import write_profile_summary

    cmp = Comparison(compare_plan(args, args.out))
    cmp.run()
    print(Path(args.out, "comparison.md").read_text(encoding="utf-8"))
    options = {"protocol": args.protocol, "method": args.method, "without": args.without}
    entry = write_profile_summary(
        cmp,
        Path(args.out) / LEADERBOARD_DIR,
        portable_command("steer-envs compare", getattr(args, "argv", [])),
        options,
    )
    print(
        f"leaderboard entry: {entry} (render it: steer-envs leaderboard --protocol {cmp.plan.protocol} "
        f"--add {args.out} --doc FILE)"
    )
    return 0


# -- leaderboard ---------------------------------------------------------------------------------------------------
#: the folder of a compare run that holds its leaderboard entry (``<profile>/summary.json`` + episodes)
LEADERBOARD_DIR = "leaderboard"


def _configure_leaderboard(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol", default="standard", help="the protocol whose comparisons the page shows (default standard)"
    )
    parser.add_argument(
        "--add",
        nargs="+",
        default=[],
        metavar="RUN",
        help="compare run folders (or their leaderboard/<profile>/summary.json) to add as rows: an entry of the "
        "committed tables' setting joins its table, any other gets its own",
    )
    parser.add_argument("--doc", default=None, help="the page to write (default docs/leaderboard.md)")


def _run_leaderboard(args: argparse.Namespace) -> int:
    from .pages.leaderboard import DOC, build

    doc = build(Path(args.doc) if args.doc else DOC, protocol=args.protocol, added=tuple(args.add))
    print(f"wrote {doc} and its performance profiles in {doc.parent / 'leaderboard'}")
    return 0


# -- headroom ----------------------------------------------------------------------------------------------------
def _configure_headroom(parser: argparse.ArgumentParser) -> None:
    # the defaults of benchmarks.harness.ladder.LadderConfig, spelled out so building the parser imports nothing heavy
    d = argparse.Namespace(
        dev_limit=20,
        dev_seeds=1,
        max_at=3,
        train_tasks=40,
        train_forks=2,
        planner_forks=2,
        oracle_lookahead=4,
        target=1.0,
    )
    rungs = (
        "none random best_fixed_rule reading_bound@1 reading_bound@every learnable_ceiling learnable_ceiling_free "
        "lookahead_planner oracle"
    ).split()
    parser.add_argument(
        "--out",
        help="folder for the ladder (default runs/headroom/<profile>_<split>); a rerun "
        "with the same options resumes it",
    )
    parser.add_argument(
        "--rungs", nargs="+", default=rungs, metavar="R", help=f"rungs to run (default all: {' '.join(rungs)})"
    )
    parser.add_argument(
        "--dev-limit",
        type=int,
        default=d.dev_limit,
        help=f"dev tasks per benchmark for the dev choices (default {d.dev_limit})",
    )
    parser.add_argument(
        "--dev-seeds", type=int, default=d.dev_seeds, help=f"seeds per dev task (default {d.dev_seeds})"
    )
    parser.add_argument(
        "--max-at", type=int, default=d.max_at, help=f"fixed rules at decisions 0..N (default {d.max_at})"
    )
    parser.add_argument(
        "--train-tasks",
        type=int,
        default=d.train_tasks,
        help=f"train tasks per benchmark for the learnable ceiling's gains (default {d.train_tasks})",
    )
    parser.add_argument(
        "--train-forks",
        type=int,
        default=d.train_forks,
        help=f"forks per option per train decision (default {d.train_forks})",
    )
    parser.add_argument(
        "--planner-forks",
        type=int,
        default=d.planner_forks,
        help=f"the lookahead planner's forks per option (default {d.planner_forks})",
    )
    parser.add_argument(
        "--oracle-lookahead",
        type=int,
        default=d.oracle_lookahead,
        help=f"the oracle's forks per option (default {d.oracle_lookahead})",
    )
    parser.add_argument(
        "--target",
        type=float,
        default=d.target,
        help=f"interventions per task the learnable ceiling's threshold is set to on dev (default {d.target:g})",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="processes playing episodes and forks (same results; default 1)"
    )
    _add_protocol(parser)


def _run_headroom(args: argparse.Namespace) -> int:
    from steer_envs.errors import SteerEnvsError

    from .harness.ladder import LadderConfig, run_ladder

    if args.intervention_cost:  # the flag comes with the protocol's; the ladder compares rungs at matched rates
        raise SteerEnvsError(
            "the headroom ladder scores F1 without an intervention cost (rates are matched on dev "
            "instead); drop --intervention-cost"
        )
    config = LadderConfig(
        **protocol_kwargs(args, COMPARE_PROTOCOL),
        seeds=args.seeds,
        limit=args.limit,
        dev_limit=args.dev_limit,
        dev_seeds=args.dev_seeds,
        max_at=args.max_at,
        train_tasks=args.train_tasks,
        train_forks=args.train_forks,
        planner_forks=args.planner_forks,
        oracle_lookahead=args.oracle_lookahead,
        target=args.target,
        rungs=tuple(args.rungs),
        workers=args.workers,
    )
    out = args.out or str(Path("runs", "headroom", f"{args.executor.replace(':', '_')}_{args.split}"))
    print(run_ladder(config, out))
    print(f"ladder folder: {out} (ladder.md, ladder.json, choices.json, episodes/)")
    return 0


# -- demo --------------------------------------------------------------------------------------------------------
def _configure_demo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="runs/demo", help="run folder (default runs/demo)")
    parser.add_argument("--limit", type=int, default=None, help="test tasks per benchmark (default: the demo's)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per task (default: the demo's)")
    parser.add_argument("--quick", action="store_true", help="a tiny version (about a minute), for smoke tests")
    parser.add_argument("--no-progress", action="store_true")
    add_data_dir(parser)


def _run_demo(args: argparse.Namespace) -> int:
    from .harness.demo import run_demo

    run_demo(
        args.out,
        limit=args.limit,
        seeds=args.seeds,
        quick=args.quick,
        progress=not args.no_progress,
        data_dir=args.data_dir,
    )
    return 0


# -- llm-headline --------------------------------------------------------------------------------------------------
def _configure_llm_headline(parser: argparse.ArgumentParser) -> None:
    from .llm_headline import add_arguments

    add_arguments(parser)


def _run_llm_headline(args: argparse.Namespace) -> int:
    from .llm_headline import config_from_args, run

    report = run(config_from_args(args), doc=args.doc, summary=args.summary)
    print(Path(args.out, "results_llm_headline.md").read_text(encoding="utf-8"))
    return 0 if report["complete"] else 1


def register_commands() -> None:
    """Called through the ``steer_envs.commands`` entry point."""
    register_command(
        Command(
            "eval",
            "evaluate methods on identical tasks and seeds (resumable run folder)",
            _configure_eval,
            _run_eval,
            resume=rerun,
        )
    )
    register_command(
        Command("sweep", "τ sweep and executor-transfer sweep", _configure_sweep, _run_sweep, resume=rerun)
    )
    register_command(
        Command(
            "sensitivity",
            "re-run methods over a grid of response assumptions; does their order hold?",
            _configure_sensitivity,
            _run_sensitivity,
            resume=rerun,
        )
    )
    register_command(
        Command(
            "compare",
            "the fair comparison of a protocol's contenders and yours (--method): knobs chosen on dev, training "
            "seeds, matched budgets, paired intervals; writes a leaderboard entry",
            _configure_compare,
            _run_compare,
            resume=rerun,
        )
    )
    register_command(
        Command(
            "leaderboard",
            "the leaderboard page from the committed comparisons' summaries, plus your compare runs (--add)",
            _configure_leaderboard,
            _run_leaderboard,
        )
    )
    register_command(
        Command(
            "report",
            "write report.md and PNG plots for a run folder, or rebuild a results page from its run folders "
            "(`report --help` lists the pages)",
            _configure_report,
            _run_report,
        )
    )
    register_command(
        Command(
            "headroom",
            "a profile's headroom ladder: none, random, best fixed rule, reading bound, "
            "learnable-ceiling estimate, lookahead planner, oracle (paired intervals; resumable)",
            _configure_headroom,
            _run_headroom,
            resume=rerun,
        )
    )
    register_command(
        Command(
            "llm-headline",
            "zero-shot LLM steerer vs the same LLM trained by the steering trainer, "
            "both served by vLLM, rate-matched on dev, paired on test (resumable)",
            _configure_llm_headline,
            _run_llm_headline,
            resume=rerun,
        )
    )
    register_command(
        Command(
            "demo",
            "the main job: train a steerer briefly, compare with baselines, table + plots",
            _configure_demo,
            _run_demo,
            resume=rerun,
        )
    )
