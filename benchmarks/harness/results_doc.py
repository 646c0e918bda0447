"""Regenerate ``docs/results.md``: the rate-matched comparison on three executor profiles, and zero-shot steering.

For each profile (each trained on its own profile) it runs :class:`~.comparison.Comparison` on the **test** split: every
knob chosen on dev, every learned method trained with several seeds, filtered BC and SB3 PPO at the RL steerer's
measured budget, intervals over tasks and training seeds. Then, unless ``--llm-limit 0``, the paper's zero-shot
steerer (a prompted causal LM, ``steering_zero_shot``) on a test subset of at least 20 tasks per benchmark, paired with
the main rows on the same tasks. Every step resumes (run folders, checkpoints, dev choices), so an interrupted
regeneration continues where it stopped. When a profile is finished its compact summary is written to
``--summaries`` (default ``docs/results/main/<profile>/``, :mod:`.results_summary`), and the page is built from the
summaries only by the page builder (:mod:`benchmarks.pages.results`; ``steer-envs report results`` rebuilds it
without running). The run folders (``--out``) need not outlive the summary: a profile can be run on one machine and
its summary committed. Nothing here chooses a value on test: the RL steerer's configuration is a parameter
(``--method steering_rl:...``, which replaces the protocol's RL row), chosen beforehand on dev.

Planning and verification (``--own-rate-rows``, default :data:`~.protocols.OWN_RATE_ROWS`) run beside the
rate-matched rows at their own rate, trained with the RL row's trainer options and ``--train-seeds``. A summary
written without them gets them with ``--add-rows NAME ...`` (:mod:`.summary_rows`): only those rows are trained and
evaluated, on the summary's tasks, seeds and trainer options, paired with its stored episodes; the rest of the
profile is not rerun and its run folders are not needed.

Usage::

    python -m benchmarks.harness.results_doc --profiles sim:default --limit 100 --dev-limit 20 --seeds 3 \\
        --train-seeds 3 --method steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800 --spearman-tasks 10 --llm-limit 0
    python -m benchmarks.harness.results_doc --limit 2 --dev-limit 2 --seeds 1 --train-seeds 2 \\
        --method steering_rl:G=2,N=2,bank_tasks=16,k=4,m=2 --llm-limit 0 --doc /tmp/results.md \\
        --summaries /tmp/summaries                                                            # a dry run
    python -m benchmarks.harness.results_doc --profiles sim:default \\
        --add-rows planning_untrained planning_rl verification_untrained verification_rl     # rows added later
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.pages import template
from benchmarks.pages.results import FULL, LLM, PAGE, PROFILES, is_dry_run, is_subset, llm_data  # noqa: F401
from steer_envs.atomic import atomic_write_text
from steer_envs.paths import REPO_ROOT

from .comparison import Comparison, ComparisonPlan, Row
from .operating import choose_rate
from .protocols import OWN_RATE_ROWS, RL, RULE, UNTRAINED
from .provenance import portable_command
from .results_summary import (
    LLM_DIR,
    SUMMARY_FILE,
    SUMMARY_ROOT,
    now,
    read_summaries,
    record_part,
    write_profile_summary,
)
from .runner import REFERENCE
from .setting import setting_card
from .summary_rows import add_rows
from .sweeps import executor_dirname, with_option

GEMMA_NOTE = template("results_gemma_note")
#: rows shown beside the rate-matched ones without a knob: the oracle's headroom (it reads hidden state, so it is
#: never marked best)
CONTEXT_ROWS = ("oracle",)
#: measured on the shared 2-core machine (one core, other jobs running), gemma-3-270m through transformers, fp32:
#: one fast-path forward pass 3.5 s CPU, one slow-path sample 43 s CPU; an episode at ~1 intervention per task
#: (~2.8 decisions) therefore costs ~50 s of one core (the text is the page template results_gemma_note.md)


def profile_plan(args: argparse.Namespace, executor: str) -> ComparisonPlan:
    from benchmarks.cli import compare_plan

    return compare_plan(args, Path(args.out) / executor_dirname(executor), executor=executor)


def llm_spec(args: argparse.Namespace) -> str:
    """The zero-shot method spec: ``--llm-model`` plus each ``--llm-options`` ``key=value`` (e.g. a served
    steerer's ``prompt_chars``, ``think_tokens``, ``name_choice``)."""
    spec = with_option(LLM, "model", args.llm_model)
    for item in filter(None, (args.llm_options or "").split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--llm-options: {item!r} is not key=value (e.g. think_tokens=24,name_choice=choice)")
        spec = with_option(spec, key.strip(), value.strip())
    return spec


def llm_section_data(args: argparse.Namespace, main: Comparison) -> dict:
    """Run the prompted LLM steerer next to the main rows, on the first ``llm_limit`` test tasks per benchmark, and
    return the numbers the page's LLM section shows (also written to ``SUMMARIES/llm/summary.json``)."""
    p = main.plan
    llm_plan = replace(
        p,
        out=Path(args.out) / "llm",
        limit=args.llm_limit,
        seeds=1,
        dev_limit=args.llm_dev_limit,
        dev_seeds=1,
        max_probes=args.llm_probes,
        curves=False,
        spearman_tasks=0,
        checkpoints=main.checkpoints,
    )
    cmp = Comparison(llm_plan)
    llm = llm_spec(args)
    started = time.monotonic()
    choice = choose_rate(cmp.dev, llm, p.target, p.tolerance, args.llm_probes, progress=p.progress)
    dev_seconds = time.monotonic() - started
    rows = {name: main.rows[name] for name in (REFERENCE, RULE, UNTRAINED, RL) if name in main.rows}
    rows[LLM] = Row(
        LLM,
        [choice.label],
        f"tau={choice.value} (dev rate {choice.dev_rate:.2f} on {args.llm_dev_limit} dev tasks per benchmark)",
    )
    cmp.rows = rows
    started = time.monotonic()
    cmp.evaluate_rows()
    seconds = time.monotonic() - started
    summaries, boot = cmp.summaries()
    pairs = {(LLM, name): boot.gain(LLM, name)[1] for name in rows if name != LLM}
    card = setting_card(cmp.report, p.train_seeds, (cmp.dev,))
    data = llm_data(
        llm,
        args.llm_limit,
        args.llm_dev_limit,
        card,
        summaries,
        pairs,
        {name: row.knob for name, row in rows.items()},
        cmp.report.config.benchmarks,
        {"dev (choose tau)": round(dev_seconds, 1), "test (every row)": round(seconds, 1)},
        command_and_options(args)[0],
    )
    (Path(args.summaries) / LLM_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(args.summaries) / LLM_DIR / SUMMARY_FILE, json.dumps(data, indent=2) + "\n")
    return data


def command_and_options(args: argparse.Namespace, plan: ComparisonPlan | None = None) -> tuple[str, dict]:
    """The command a summary records (as typed, machine folders as ``RUNS/...``) and the options the page states:
    the plan's values (the protocol's, with the flags given on top) where a plan is at hand."""
    command = portable_command("python -m benchmarks.harness.results_doc", args.argv)
    options = {k: getattr(args, k) for k in ("protocol", "llm_limit", "method")}
    for key in ("seeds", "train_seeds", "split", "limit", "target"):
        options[key] = getattr(plan, key) if plan is not None else getattr(args, key)
    return command, options


def run_profile(args: argparse.Namespace, executor: str) -> Comparison:
    """Run (or resume) one profile's comparison, record this invocation as a part of it, and write its summary."""
    cmp = Comparison(profile_plan(args, executor))
    print(f"\n=== {executor}: {cmp.plan.out}", flush=True)
    times = cmp.plan.out / "wall_times.json"
    before = json.loads(times.read_text(encoding="utf-8")) if times.is_file() else {}
    start = now()
    cmp.run()
    record_part(cmp.plan.out, start, before, json.loads(times.read_text(encoding="utf-8")))
    command, options = command_and_options(args, cmp.plan)
    dest = write_profile_summary(cmp, Path(args.summaries), command, options)
    print(f"wrote the summary {dest}", flush=True)
    return cmp


def add_rows_main(args: argparse.Namespace, doc: Path) -> int:
    """``--add-rows``: add the rows to each profile's summary (measured profiles only), then rebuild the page."""
    from steer_envs.rollouts import pool_config_from_args

    root = Path(args.summaries)
    profiles = args.profiles or [e for e, s in read_summaries(root, PROFILES).items() if s is not None]
    command, _ = command_and_options(args)
    local = {
        "data_dir": getattr(args, "data_dir", None),
        "progress": not args.no_progress,
        "pool": pool_config_from_args(args),
    }
    for executor in profiles:
        print(f"\n=== {executor}: adding {' '.join(args.add_rows)}", flush=True)
        out = Path(args.out) / executor_dirname(executor)
        dest = add_rows(root, executor, tuple(args.add_rows), out, command, **local)
        print(f"updated the summary {dest}", flush=True)
    PAGE.build(args.summaries, doc)
    print(f"\nwrote {doc}")
    return 0


def transfer_main(args: argparse.Namespace, doc: Path) -> int:
    """``--transfer SOURCE``: the source's RL steerers on every other summarised profile, then rebuild the page."""
    from steer_envs.rollouts import pool_config_from_args

    from .summary_transfer import add_transfer

    root = Path(args.summaries)
    if not args.transfer_from:
        raise SystemExit(
            "--transfer needs --transfer-from: the source profile's run folder (OUT/<profile> of the results_doc run "
            "that measured it), whose checkpoints hold the trained steerers"
        )
    targets = args.profiles or [e for e, s in read_summaries(root, PROFILES).items() if s is not None]
    command, _ = command_and_options(args)
    local = {"data_dir": getattr(args, "data_dir", None), "progress": not args.no_progress}
    local["pool"] = pool_config_from_args(args)
    dest = add_transfer(
        root, args.transfer, targets, Path(args.transfer_from), Path(args.out) / "transfer", command, **local
    )
    print(f"updated the transfer summary {dest}", flush=True)
    PAGE.build(args.summaries, doc)
    print(f"\nwrote {doc}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from benchmarks.cli import _add_protocol, add_compare_arguments
    from steer_envs.rollouts import add_pool_arguments

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/results", help="parent of the run folders (default runs/results)")
    parser.add_argument("--doc", default=str(REPO_ROOT / "docs" / "results.md"))
    parser.add_argument(
        "--summaries",
        default=str(SUMMARY_ROOT),
        help="where each finished profile's compact summary goes, and what the page is built from "
        "(default docs/results/main)",
    )
    parser.add_argument(
        "--profiles",
        nargs="+",
        help=f"executors, each trained and compared on its own (default {' '.join(PROFILES)}; with --add-rows: "
        "those with a summary)",
    )
    parser.add_argument(
        "--add-rows",
        nargs="+",
        metavar="NAME",
        help="only add these own-rate rows (e.g. planning_rl verification_rl) to each profile's existing summary: "
        "trained with the summary's RL trainer options and training seeds, evaluated on its tasks and seeds, "
        "paired with its stored "
        "episodes; the other rows are not rerun (the summary's setting is used, not --limit, --seeds, --method)",
    )
    parser.add_argument(
        "--transfer",
        metavar="SOURCE",
        help="only measure transfer: SOURCE's RL steerers (its summary's training seeds and dev-chosen τ), unchanged, "
        "on every other profile with a summary (or --profiles), paired with that profile's stored rows",
    )
    parser.add_argument(
        "--transfer-from",
        metavar="RUN_FOLDER",
        help="with --transfer: SOURCE's run folder (OUT/<profile> of the run that measured it), for its checkpoints",
    )
    parser.add_argument(
        "--llm-limit",
        type=int,
        default=20,
        help="test tasks per benchmark for the zero-shot LLM steerer (0: no LLM section; < 20 makes "
        "the page a dry run)",
    )
    parser.add_argument("--llm-dev-limit", type=int, default=2, help="dev tasks per benchmark to set its τ (default 2)")
    parser.add_argument("--llm-probes", type=int, default=5, help="dev evaluations of its τ bisection (default 5)")
    parser.add_argument("--llm-model", default="hf:gemma-3-270m", help="the LLM steerer's model (hf:... or openai:...)")
    parser.add_argument(
        "--llm-options",
        default="",
        help="more options of the zero-shot steerer, key=value,... (served: prompt_chars, think_tokens, name_choice)",
    )
    add_compare_arguments(parser)
    parser.set_defaults(context_rows=list(CONTEXT_ROWS), own_rate_rows=list(OWN_RATE_ROWS))
    _add_protocol(parser, split=None, seeds=None, limit=None)  # the protocol's, unless given
    add_pool_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    doc = Path(args.doc)
    if args.add_rows:
        return add_rows_main(args, doc)
    if args.transfer:
        return transfer_main(args, doc)
    comparisons = {executor: run_profile(args, executor) for executor in args.profiles or PROFILES}
    if args.llm_limit:
        main_cmp = comparisons.get("sim:default") or next(iter(comparisons.values()))
        print(f"\n=== zero-shot LLM steerer ({args.llm_model})", flush=True)
        llm_section_data(args, main_cmp)
    PAGE.build(args.summaries, doc)
    print(
        f"\nwrote {doc} (rebuild it from the summaries: steer-envs report results --out {args.summaries} --doc {doc})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
