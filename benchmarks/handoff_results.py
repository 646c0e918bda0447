"""The hand-off table (the multi-agent variant of steering, docs/methods.md): ``python -m benchmarks.handoff_results``.

1. Calibration: the simulated pipeline without supervision on the split, per benchmark: F1, agent turns per task,
   the share of episodes in which the verifier rejected a right answer at least once (over-rejection), and how
   often the pipeline ends without an answer.
2. Every method through the one harness (``benchmarks.harness.evaluate``), in one run folder, on the same tasks and
   seeds: no supervision; zero-shot steering at the coverage (τ chosen on dev); zero-shot forced at every hand-off;
   random at the same coverage; the best fixed rule (chosen on dev); RL steering at the coverage and at every
   hand-off, each trained with every ``--train-seeds`` seed; and RL at every hand-off whose slow path may pass
   (``EVERY_WITH_PASS``), at the table's budget and at the reduced budget its pass prior was chosen with, and the
   same with a pass that reads the fast path's z (``EVERY_PASS_READS_FAST``), at the table's budget, as trained
   and with its pass logit's deployment shift chosen on dev (``pass_bias=dev``).
3. The table: F1 (macro over benchmarks), the paired gain over no supervision with a 95% interval (the harness's
   bootstrap, :class:`~benchmarks.harness.stats.HierarchicalBootstrap`: tasks resampled within benchmarks, seeds
   averaged per task, training seeds resampled for RL rows), agent turns per task, coverage (interventions per agent
   turn); then RL at the coverage against zero-shot, random and the best fixed rule, paired the same way. The
   harness's setting card on top. The page is written by the page builder (:mod:`benchmarks.pages.handoff`;
   ``steer-envs report results_handoff --out OUT`` rebuilds it from the run folder).

Writes ``OUT/results_handoff.md`` and ``OUT/results_handoff.json``; the run folder is ``OUT`` (resumable). With
``--summary DIR`` also the compact summary the page and the README read without the run folder (the report and every
test episode, :func:`write_summary`).

A confirmation (``--skip 40 --rows NAME ...``): the named rows and no supervision only, on tasks the table's
``--limit 40`` never used (bamboogle, whose 36 test tasks the table uses all of, has none left: the averages are
over the other six; training reads all seven train splits, as the table's does). It writes
``OUT/results_handoff_confirm.json`` and prints the rows; no page (its comparisons need every row). With
``--checkpoints DIR`` (the table's ``OUT/checkpoints``) it deploys the table's trained steerers and their dev
choices instead of training its own; the two commands may run at once (each checkpoint is built once, under a
lock, :func:`benchmarks.harness.budget.build_lock`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from steer_envs.atomic import atomic_write_bytes, atomic_write_text
from steer_envs.cli.common import add_protocol_arguments
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.episodes import EpisodeLog, EpisodeRecord, episode_seed
from steer_envs.errors import SteerEnvsError
from steer_envs.failures import episode_failed
from steer_envs.ids import HANDOFF_ENV

from .harness.config import EvalConfig
from .harness.provenance import code_record, portable_command
from .harness.results_summary import EPISODES_FILE, gzip_lines, read_episodes
from .harness.runfolder import RunFolder
from .harness.runner import evaluate
from .harness.setting import setting_card
from .harness.stats import HierarchicalBootstrap, RowRuns, macro_mean
from .harness.summary_rows import stored_record
from .pages.handoff import PAGE as HANDOFF_PAGE
from .pages.handoff import REPORT_FILE

RESAMPLES = 2000
PROG = "python -m benchmarks.handoff_results"
#: what a confirmation (``--rows``) writes instead of the page's report
CONFIRM_FILE = "results_handoff_confirm.json"
#: the every-hand-off steerer with the paper's pass ∪ A_int at every decision: the slow path may
#: pass, its initial pass probability 0.9 (chosen on dev among 0.8 / 0.9 / 0.95 at ``REDUCED_BUDGET``,
#: docs/archive/results_handoff.md), trained on continuations in which it takes every later hand-off
EVERY_WITH_PASS = "every=1,slow_pass=1,pass_prior=0.9,continuation=policy,continuation_gate=open"
#: the same steerer whose slow-path pass reads the fast path's z (``pass_reads_fast``), its pass prior chosen on dev at
#: ``REDUCED_BUDGET`` among 0.3 / 0.5 / 0.7 / 0.9 (docs/archive/results_handoff.md)
EVERY_PASS_READS_FAST = (
    "every=1,slow_pass=1,pass_prior=0.5,pass_reads_fast=1,continuation=policy,continuation_gate=open"
)
#: the training budget the pass prior was chosen with (the table's RL rows train at
#: ``baselines.handoff.HandoffRLOptions``' defaults)
REDUCED_BUDGET = "m=12,k=48,G=4,N=4,bank_tasks=200"


def method_specs(coverage: float, train_seeds: Sequence[int]) -> dict[str, list[str]]:
    """Row name -> the method labels it averages (one per training seed for RL)."""
    c = f"{coverage:g}"
    return {
        "no supervision": ["handoff_none"],
        f"zero-shot steering, {coverage:.0%} coverage": [f"handoff_zero_shot:coverage={c}"],
        "zero-shot steering, every hand-off (forced)": ["handoff_zero_shot:every=1"],
        f"random, {coverage:.0%} coverage": [f"handoff_random:p={c}"],
        "best fixed rule (chosen on dev)": ["handoff_best_fixed_rule"],
        f"RL steering, {coverage:.0%} coverage": [f"handoff_rl:coverage={c},seed={s}" for s in train_seeds],
        "RL steering, every hand-off": [f"handoff_rl:every=1,seed={s}" for s in train_seeds],
        "RL steering, every hand-off, slow path may pass": [
            f"handoff_rl:{EVERY_WITH_PASS},seed={s}" for s in train_seeds
        ],
        "RL steering, every hand-off, slow path may pass (reduced budget)": [
            f"handoff_rl:{EVERY_WITH_PASS},{REDUCED_BUDGET},seed={s}" for s in train_seeds
        ],
        "RL steering, every hand-off, slow path may pass, its pass reads the fast path's z": [
            f"handoff_rl:{EVERY_PASS_READS_FAST},seed={s}" for s in train_seeds
        ],
        "the same, its pass bias chosen on dev (no retraining)": [
            f"handoff_rl:{EVERY_PASS_READS_FAST},pass_bias=dev,seed={s}" for s in train_seeds
        ],
    }


# -- calibration ---------------------------------------------------------------------------------------------------
def calibrate(config: EvalConfig) -> dict[str, Any]:
    """The unsupervised pipeline on the run's tasks and seeds (the same env seeds the harness uses)."""
    import gymnasium as gym

    import steer_envs  # noqa: F401

    tasks = config.tasks()
    env = gym.make(
        HANDOFF_ENV,
        executor=config.executor,
        split=config.split,
        max_turns=config.max_turns,
        task_ids=[t.id for t in tasks],
        data_dir=config.data_dir,
    )
    rows: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    by_role: dict[str, list[int]] = defaultdict(list)
    failed = 0
    for seed_index in range(config.seeds):
        for task in tasks:
            env.reset(seed=episode_seed(task.id, seed_index), options={"task_id": task.id})
            terminated = truncated = False
            while not (terminated or truncated):  # a truncation (a service failure) ends the episode too
                _, _, terminated, truncated, info = env.step(0)
            if episode_failed(info):  # no outcome: left out of the calibration, counted
                failed += 1
                continue
            pv = info["privileged"]
            rows[task.benchmark].append(
                (
                    info["f1"],
                    info["agent_turns"],
                    float(pv["right_answer_rejected"]),
                    float(info["answer"] in (None, "insufficient evidence")),
                    float(pv["verifier_strict"]),
                )
            )
            for role, n in info["turns_by_role"].items():
                by_role[role].append(n)
    env.close()
    per_bench = {
        b: dict(
            zip(
                ("f1", "agent_turns", "over_rejection", "no_answer", "strict_verifier"),
                (100 * float(np.mean([r[0] for r in v])), *[float(np.mean([r[i] for r in v])) for i in range(1, 5)]),
            )
        )
        for b, v in rows.items()
    }
    every = [r for v in rows.values() for r in v]
    return {
        "per_benchmark": per_bench,
        "f1_macro": float(np.mean([v["f1"] for v in per_bench.values()])),
        "agent_turns": float(np.mean([r[1] for r in every])),
        "over_rejection": float(np.mean([r[2] for r in every])),
        "no_answer": float(np.mean([r[3] for r in every])),
        "turns_by_role": {r: float(np.mean(v)) for r, v in by_role.items()},
        "episodes": len(every),
        "failed_episodes": failed,
    }


# -- aggregation over training seeds ---------------------------------------------------------------------------------
def row_runs(name: str, rows: list[list[EpisodeRecord]]) -> RowRuns:
    """A table row for the harness bootstrap: one run per training seed."""
    return RowRuns(name, {f"{name}#{i}": records for i, records in enumerate(rows)})


def row_summary(rows: list[list[EpisodeRecord]], benchmarks: Sequence[str]) -> dict[str, Any]:
    every = [r for seed_rows in rows for r in seed_rows]
    f1 = [100 * macro_mean(r, benchmarks) for r in rows]
    decisions = sum(r.decisions for r in every)
    return {
        "f1": float(np.mean(f1)),
        "f1_by_training_seed": f1,
        "agent_turns": float(np.mean([r.executor_turns for r in every])),
        "coverage": sum(r.interventions for r in every) / max(1, decisions),
        "interventions": float(np.mean([r.interventions for r in every])),
        "training_seeds": len(rows),
    }


# -- the card ----------------------------------------------------------------------------------------------------------
def pipeline_profile_hash(executor: str) -> str:
    """``name.json sha256:<16 hex>`` of the pipeline profile a ``sim:`` spec names (the hand-off env reads the
    pipeline's profiles, not the single-agent simulator's)."""
    from steer_envs.executors.pipeline import PROFILE_DIR

    profile = executor.partition(":")[2] or "default"
    path = Path(profile) if profile.endswith(".json") else PROFILE_DIR / f"{profile}.json"
    return f"{path.name} sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def handoff_card(folder: RunFolder, coverage: float, train_seeds: Sequence[int]) -> dict[str, Any]:
    """The harness setting card of the run folder (:func:`benchmarks.harness.setting.setting_card`: corpus, retriever,
    executor, split, tasks, seeds, commits recorded in the folder), with the pipeline's profile hash and what the
    hand-off table adds: the env, the coverage and the training seeds."""
    card = asdict(
        replace(setting_card(folder, len(train_seeds)), executor_hash=pipeline_profile_hash(folder.config.executor))
    )
    card["commits"] = list(card["commits"])
    return {"env": HANDOFF_ENV, **card, "coverage": coverage, "training_seeds": list(train_seeds)}


def render(report: dict[str, Any]) -> str:
    """The page body (:func:`benchmarks.pages.handoff.render_report`)."""
    from .pages.handoff import render_report

    return render_report(report)


def _with_options(spec: str, options: str) -> str:
    if not options:
        return spec
    return f"{spec},{options}" if ":" in spec else f"{spec}:{options}"


def run(
    out: str | Path,
    split: str = "test",
    limit: int = 40,
    seeds: int = 3,
    train_seeds: Sequence[int] = (0, 1, 2),
    coverage: float = 0.25,
    max_turns: int = 30,
    executor: str = "sim:default",
    train_options: str = "",
    progress: bool = False,
    benchmarks: Sequence[str] | None = None,
    method_options: dict[str, str] | None = None,
    skip: int = 0,
    only_rows: Sequence[str] | None = None,
    checkpoints: str | Path | None = None,
    summary: str | Path | None = None,
    command: str = "",
) -> dict[str, Any]:
    """Evaluate every row in the run folder ``out`` (resumable), write ``results_handoff.json`` and the page.
    ``method_options``: extra options per method name (e.g. ``{"handoff_zero_shot": "dev_tasks=2"}``, for a small
    run); ``train_options`` is the same for ``handoff_rl``. ``only_rows``: these rows (and no supervision), a
    confirmation: written to ``results_handoff_confirm.json``, no page; ``skip``: the tasks to pass over first;
    ``checkpoints``: the trained steerers' folder (default ``out/checkpoints``; another run's, to deploy its);
    ``summary``: a folder for the compact summary (:func:`write_summary`) beside the run folder's report. The report
    records ``command`` (what made it, as :func:`main` writes it), which the page shows."""
    from steer_envs.data.tasks import BENCHMARKS

    start = time.time()
    config = EvalConfig(
        executor=executor,
        benchmarks=tuple(benchmarks or BENCHMARKS),
        split=split,
        seeds=seeds,
        limit=limit,
        max_turns=max_turns,
        skip=skip,
    )
    specs = method_specs(coverage, train_seeds)
    if only_rows:
        unknown = [r for r in only_rows if r not in specs]
        if unknown:
            raise SteerEnvsError(f"unknown hand-off row(s) {unknown}; the rows are: {list(specs)}")
        specs = {k: v for k, v in specs.items() if k == "no supervision" or k in only_rows}
    folder = RunFolder(out, config, checkpoints)
    config = folder.config
    extra = {**(method_options or {}), **({"handoff_rl": train_options} if train_options else {})}
    specs = {k: [_with_options(s, extra.get(s.split(":", 1)[0], "")) for s in v] for k, v in specs.items()}
    records: dict[str, list[list[EpisodeRecord]]] = {}
    for name, labels in specs.items():
        records[name] = []
        for spec in labels:
            outcome = evaluate(folder, spec, progress=progress)
            records[name].append(EpisodeLog(folder.episodes_path(outcome.label)).records)
    benchmarks = list(config.benchmarks)
    rows, comparisons = table(records, specs, benchmarks, None if only_rows else coverage)
    if only_rows:  # a confirmation: the rows against no supervision only
        report = {
            "card": handoff_card(folder, coverage, train_seeds),
            "skip": skip,
            "rows": rows,
            "wall_s": round(time.time() - start, 1),
        }
        atomic_write_text(Path(out, CONFIRM_FILE), json.dumps(report, indent=2) + "\n")
        return report
    report = {
        "command": command,
        "card": handoff_card(folder, coverage, train_seeds),
        "calibration": calibrate(config),
        "rows": rows,
        "comparisons": comparisons,
        "wall_s": round(time.time() - start, 1),
    }
    atomic_write_text(Path(out, REPORT_FILE), json.dumps(report, indent=2) + "\n")
    if summary is not None:
        write_summary(Path(summary), report, records, folder.root)
    HANDOFF_PAGE.build(out, Path(out, "results_handoff.md"))
    return report


def table(
    records: dict[str, list[list[EpisodeRecord]]],
    specs: dict[str, list[str]],
    benchmarks: Sequence[str],
    coverage: float | None,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    """The table's rows (each with its paired gain over no supervision) and, given the ``coverage`` of the RL row,
    that row against zero-shot, random and the best fixed rule: one paired bootstrap over every row (the same task
    draws pair them, training seeds resampled per row). What a run computes and what a test recomputes from the
    committed episodes."""
    boot = HierarchicalBootstrap(
        [row_runs(name, recs) for name, recs in records.items()], list(benchmarks), resamples=RESAMPLES
    )
    rows = {}
    for name, recs in records.items():
        rows[name] = row_summary(recs, benchmarks)
        rows[name]["labels"] = specs[name]
        if name != "no supervision":
            rows[name]["gain"] = asdict(boot.gain(name, "no supervision")[1])
    if coverage is None:
        return rows, {}
    rl_name = f"RL steering, {coverage:.0%} coverage"
    others = (f"zero-shot steering, {coverage:.0%} coverage", f"random, {coverage:.0%} coverage")
    comparisons = {name: asdict(boot.gain(rl_name, name)[1]) for name in (*others, "best fixed rule (chosen on dev)")}
    return rows, comparisons


#: the per-episode fields a committed summary keeps (every number of the table is computed from them)
SUMMARY_FIELDS = ("task_id", "benchmark", "seed", "f1", "em", "interventions", "executor_turns", "decisions", "failed")


def write_summary(
    folder: Path,
    report: dict[str, Any],
    records: dict[str, list[list[EpisodeRecord]]],
    run_root: Path,
) -> None:
    """The compact summary a page and the README read without a run folder: ``results_handoff.json`` (the report)
    and ``episodes.jsonl.gz`` (one line per test episode of every row, with the row's method spec of its training
    run), from which :func:`table_from_summary` recomputes every interval; with the code behind it
    (:func:`~benchmarks.harness.provenance.code_record` of the run folder)."""
    lines = [
        {"row": name, "label": label, **{k: getattr(r, k) for k in SUMMARY_FIELDS}}
        for name, runs in records.items()
        for label, run_records in zip(report["rows"][name]["labels"], runs, strict=True)
        for r in run_records
    ]
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / EPISODES_FILE, gzip_lines(lines))
    atomic_write_text(
        folder / REPORT_FILE,
        json.dumps({"code": code_record([run_root]), **report}, indent=2) + "\n",
    )


def table_from_summary(folder: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    """:func:`table` recomputed from a committed summary's episodes (the report's rows, labels and coverage)."""
    report = json.loads((folder / REPORT_FILE).read_text(encoding="utf-8"))
    by_label: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for line in read_episodes(folder / EPISODES_FILE):
        by_label[line["row"], line["label"]].append(stored_record(line))
    specs = {name: row["labels"] for name, row in report["rows"].items()}
    records = {name: [by_label[name, label] for label in labels] for name, labels in specs.items()}
    benchmarks = list(report["card"]["tasks"])
    return table(records, specs, benchmarks, report["card"]["coverage"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/handoff_results")
    add_protocol_arguments(parser, include=("split", "benchmarks"), defaults={"split": "test"})
    parser.add_argument("--limit", type=int, default=40, help="first N tasks of each benchmark (0: all)")
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="pass over the first N tasks of each benchmark first (a confirmation on unused tasks)",
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        default=None,
        metavar="ROW",
        help="only these rows (by name) and no supervision: a confirmation, no page",
    )
    parser.add_argument(
        "--checkpoints",
        default=None,
        metavar="DIR",
        help="where trained steerers live (default OUT/checkpoints): the table's, for a confirmation",
    )
    parser.add_argument("--seeds", type=int, default=3, help="evaluation seeds per task")
    parser.add_argument("--train-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--coverage", type=float, default=0.25)
    add_protocol_arguments(parser, include=("max_turns", "executor"), defaults={"max_turns": 30})
    parser.add_argument("--train-options", default="", help="extra handoff_rl options, e.g. m=8,k=32")
    parser.add_argument(
        "--summary",
        default=None,
        metavar="DIR",
        help="also write the compact summary (results_handoff.json, episodes.jsonl.gz) there: what the page and the "
        "README are rebuilt from, committed under docs/results/handoff",
    )
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    cpu_thread_default()
    report = run(
        args.out,
        args.split,
        args.limit,
        args.seeds,
        args.train_seeds,
        args.coverage,
        args.max_turns,
        args.executor,
        args.train_options,
        args.progress,
        benchmarks=args.benchmarks,
        skip=args.skip,
        only_rows=args.rows,
        checkpoints=args.checkpoints,
        summary=args.summary,
        command=portable_command(PROG, sys.argv[1:] if argv is None else list(argv)),
    )
    if args.rows:
        print(confirmation_lines(report))
        print(f"written to {args.out}/{CONFIRM_FILE} ({report['wall_s']} s)")
        return 0
    print(render(report))
    print(f"written to {args.out}/results_handoff.md ({report['wall_s']} s)")
    return 0


def confirmation_lines(report: dict[str, Any]) -> str:
    """A confirmation's rows: F1, the paired gain over no supervision, agent turns and notes per task."""
    lines = [
        "| row | F1 | ΔF1 vs none [95%] | per training seed | agent turns / task | interventions / task |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in report["rows"].items():
        gain = row.get("gain")
        interval = f"{gain['mean']:+.2f} [{gain['low']:+.2f}, {gain['high']:+.2f}]" if gain else "-"
        seeds = ", ".join(f"{f:.2f}" for f in row["f1_by_training_seed"])
        lines.append(
            f"| {name} | {row['f1']:.2f} | {interval} | {seeds} | {row['agent_turns']:.2f} | "
            f"{row['interventions']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
