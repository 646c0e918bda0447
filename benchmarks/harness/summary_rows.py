"""Add rows to a finished profile's summary without rerunning the rest (``results_doc --add-rows``).

Why: a profile's run folders need not outlive its summary (:mod:`.results_summary`), so a row measured later (the
planning and verification rows, at their own rate) cannot lean on them. What makes a later row comparable is the
protocol, not the folder: the summary's plan fixes the tasks (the first ``limit`` of each benchmark's split), the
evaluation seeds and the RL steerer's trainer options, and every episode's env seed is a function of its
(task id, seed index) (:func:`steer_envs.episodes.episode_seed`). A row evaluated on the plan's tasks and seeds on
any machine therefore pairs with the stored episodes (``episodes.jsonl.gz``) of no supervision, the best fixed rule
and every other row on (task id, seed index); the intervals are recomputed from those episodes with the new rows
beside them (the same task draws, and training-seed draws keyed by row name, so the stored rows keep their numbers).

Before anything is trained the pairing is checked: the plan's task list, rebuilt on this checkout, must be the
stored episodes' (task, seed) pairs with the same benchmarks, and the corpus and the executor profile must hash as
the summary's card says (another corpus or profile is another testbed: refused, nothing is written). The summary
then gets the rows (labels, knob, measured budget), every table number recomputed, one more part (its wall time,
machine and commit), the commit(s) that evaluated the new rows in its card, and the command that added them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from baselines.registry import parse_method
from steer_envs.atomic import atomic_write_bytes, atomic_write_text
from steer_envs.episodes import EpisodeRecord
from steer_envs.errors import SteerEnvsError
from steer_envs.rollouts import using_pool

from .comparison import Comparison, ComparisonPlan, Row, _summary_dict, row_runs
from .provenance import code_version, read_runs
from .results_summary import (
    EPISODES_FILE,
    LOCAL_FIELDS,
    SUMMARY_FILE,
    against,
    episode_lines,
    gzip_lines,
    machine,
    now,
    profile_dir,
    read_episodes,
)
from .runfolder import RunFolder
from .runner import REFERENCE
from .setting import corpus_card, executor_hash
from .stats import HierarchicalBootstrap, RowRuns, summarize_rows

#: the wall-time steps an addition records (the page's part table shows them)
TRAIN_STEP = "train added rows"
EVALUATE_STEP = "evaluate added rows on {split}"


@dataclass(frozen=True)
class StoredProfile:
    """A profile's committed summary and its stored episodes (one dict per test episode of every row)."""

    folder: Path
    summary: dict[str, Any]
    episodes: list[dict[str, Any]]

    @staticmethod
    def read(root: Path, executor: str) -> StoredProfile:
        folder = profile_dir(root, executor)
        if not (folder / SUMMARY_FILE).is_file():
            raise SteerEnvsError(
                f"{executor} has no summary in {root} ({folder / SUMMARY_FILE}): rows are added to a measured "
                "profile; measure it first (python -m benchmarks.harness.results_doc --profiles "
                f"{executor} ...), which includes them"
            )
        summary = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
        return StoredProfile(folder, summary, read_episodes(folder / EPISODES_FILE))

    def pairs(self, label: str) -> set[tuple[str, int]]:
        return {(e["task_id"], e["seed"]) for e in self.episodes if e["label"] == label}

    def runs(self) -> dict[str, RowRuns]:
        """Each stored row's episodes per training seed, as the records its intervals were computed from."""
        by_label: dict[str, list[EpisodeRecord]] = {}
        for e in self.episodes:
            by_label.setdefault(e["label"], []).append(stored_record(e))
        return {
            name: RowRuns(name, {label: by_label.get(label, []) for label in row["labels"]})
            for name, row in self.summary["rows"].items()
        }


_RECORD_FIELDS = {f.name for f in fields(EpisodeRecord)}


def stored_record(episode: dict[str, Any], method: str | None = None) -> EpisodeRecord:
    """A stored episode (a line of a summary's ``episodes.jsonl.gz``) as an :class:`EpisodeRecord` of ``method``
    (default: the line's ``label``); its reward is not stored: no summary number reads it."""
    kept = {k: v for k, v in episode.items() if k in _RECORD_FIELDS}
    return EpisodeRecord(method=method or episode["label"], reward=0.0, **kept)


def stored_plan(summary: dict[str, Any], out: Path, **local: Any) -> ComparisonPlan:
    """The summary's comparison plan, with this machine's ``out`` and local settings (data_dir, progress, pool)."""
    known = ComparisonPlan.__dataclass_fields__
    given = {k: v for k, v in summary["plan"].items() if k in known and k not in LOCAL_FIELDS}
    return ComparisonPlan(out=out, **{**given, **{k: v for k, v in local.items() if k in known}})


def check_same_setting(report: RunFolder, stored: StoredProfile) -> None:
    """Refuse (before any training) unless new rows on ``report`` would pair with every stored row: the same
    (task, seed) pairs and benchmarks, the same corpus and executor profile as the summary's card."""
    card, cfg = stored.summary["card"], report.config
    corpus, sha = corpus_card(cfg.data_dir)
    if (corpus, sha) != (card["corpus"], card["corpus_sha"]):
        raise SteerEnvsError(
            f"the corpus here ({corpus} sha256 {sha}) is not the summary's ({card['corpus']} sha256 "
            f"{card['corpus_sha']}): rows measured on it would not pair with the stored ones; remeasure the profile"
        )
    if executor_hash(cfg.executor) != card["executor_hash"]:
        raise SteerEnvsError(
            f"the executor profile {cfg.executor} hashes {executor_hash(cfg.executor)} here, "
            f"{card['executor_hash']} in the summary: it changed since, so new rows would not pair; remeasure it"
        )
    tasks = cfg.tasks()
    expected = {(t.id, s) for t in tasks for s in range(cfg.seeds)}
    bench = {t.id: t.benchmark for t in tasks}
    for name, row in stored.summary["rows"].items():
        for label in row["labels"]:
            have = stored.pairs(label)
            if have != expected:
                raise SteerEnvsError(
                    f"the summary's {name} episodes ({label}) cover {len(have)} (task, seed) pairs, the plan's tasks "
                    f"and seeds here {len(expected)} ({len(have - expected)} only stored, {len(expected - have)} "
                    "only here): the task data changed since, so new rows would not pair; remeasure the profile"
                )
    moved = {e["task_id"] for e in stored.episodes if bench.get(e["task_id"]) != e["benchmark"]}
    if moved:
        raise SteerEnvsError(f"{len(moved)} stored task(s) belong to another benchmark here (e.g. {min(moved)})")


@dataclass
class Addition:
    """What one ``--add-rows`` invocation measured on a profile: the rows, their episodes and what it cost."""

    rows: dict[str, Row]
    runs: list[RowRuns]
    lines: list[dict[str, Any]]
    records: dict[str, dict[str, Any]]
    seconds: dict[str, float]
    commits: list[str]
    start: str


def measure(cmp: Comparison, names: tuple[str, ...], log: Callable[[str], None] = print) -> Addition:
    """Train (or load) the rows ``names`` at their own rate and evaluate them on the plan's report split."""
    start, seconds = now(), {}
    with using_pool(cmp.plan.pool) as pool:
        cmp.pool = pool
        t0 = time.perf_counter()
        rows = cmp.own_rate(names)
        seconds[TRAIN_STEP] = time.perf_counter() - t0
        cmp.rows = rows
        t0 = time.perf_counter()
        cmp.evaluate_rows()
        seconds[EVALUATE_STEP.format(split=cmp.plan.split)] = time.perf_counter() - t0
    labels = {label for row in rows.values() for label in row.labels}
    commits: list[str] = []
    for entry in read_runs(cmp.report.root):
        if entry.label in labels and entry.commit not in commits:
            commits.append(entry.commit)
    for name, row in rows.items():
        log(f"[add] {name}: {', '.join(row.labels)}")
    return Addition(
        rows=rows,
        runs=row_runs(cmp.report, rows),
        lines=episode_lines(cmp.report, rows),
        records={name: cmp.row_record(row, cmp.budget_text(row)) for name, row in rows.items()},
        seconds={k: round(v, 1) for k, v in seconds.items()},
        commits=commits or [code_version()],
        start=start,
    )


def merged(stored: StoredProfile, added: Addition, command: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary and episodes with the added rows (a row added again replaces its earlier episodes)."""
    summary = json.loads(json.dumps(stored.summary))  # a deep copy
    plan = summary["plan"]
    own = [*plan.get("own_rate_rows", []), *(n for n in added.rows if n not in plan.get("own_rate_rows", []))]
    plan["own_rate_rows"] = own
    runs = {**stored.runs(), **{r.name: r for r in added.runs}}
    context = {parse_method(spec).label for spec in plan.get("context_rows", [])}
    first = [name for name in summary["rows"] if name not in context]
    order = [*first, *(n for n in own if n not in first), *(n for n in summary["rows"] if n in context)]
    rows = [runs[name] for name in order]
    boot = HierarchicalBootstrap(rows, summary["benchmarks"])
    summaries = summarize_rows(rows, summary["benchmarks"], reference=REFERENCE, boot=boot)
    all_rows = {**summary["rows"], **added.records}
    summary["rows"] = {name: all_rows[name] for name in order}
    summary["summaries"] = [_summary_dict(s) for s in summaries]
    focus = plan.get("focus") or [n for n in first if n not in own][-1]
    summary["pairwise"] = [{"a": focus, "b": n, **asdict(boot.gain(focus, n)[1])} for n in order if n != focus]
    summary["vs_none"], summary["vs_rule"] = against(
        order, boot, plan.get("reference") or REFERENCE, plan.get("bar", "")
    )
    summary["card"]["commits"] += [c for c in added.commits if c not in summary["card"]["commits"]]
    for step, value in added.seconds.items():
        summary["seconds"][step] = round(summary["seconds"].get(step, 0.0) + value, 1)
    part = {"start": added.start, "end": now(), "machine": machine(), "seconds": added.seconds}
    summary["parts"].append({**part, "rows": list(added.rows), "commit": code_version()})
    summary.setdefault("added", []).append({"rows": list(added.rows), "command": command, "written": now()})
    episodes = [e for e in stored.episodes if e["row"] not in added.rows] + added.lines
    summary["episodes"]["count"] = len(episodes)
    return summary, episodes


def changed_rows(before: dict[str, Any], after: dict[str, Any], tolerance: float = 1e-9) -> list[str]:
    """Stored rows whose average F1 or gain moved when the rows were added (only failed episodes of a new row,
    which leave their pairs out of every row, can move them)."""
    old = {s["method"]: s for s in before["summaries"]}
    moved = []
    for s in after["summaries"]:
        o = old.get(s["method"])
        if o is None:
            continue
        gains = (o["avg_gain"] or {}).get("mean", 0.0), (s["avg_gain"] or {}).get("mean", 0.0)
        f1s = o["avg_f1"], s["avg_f1"]  # None: nothing scored
        f1_moved = (f1s[0] is None) != (f1s[1] is None) or (None not in f1s and abs(f1s[0] - f1s[1]) > tolerance)
        if f1_moved or abs(gains[0] - gains[1]) > tolerance:
            moved.append(s["method"])
    return moved


def add_rows(
    root: Path,
    executor: str,
    names: tuple[str, ...],
    out: Path,
    command: str,
    log: Callable[[str], None] = print,
    **local: Any,
) -> Path:
    """Measure the rows ``names`` for the summarised profile ``executor`` (its tasks, seeds, training seeds and RL
    trainer options; run folders under ``out``) and write them into its summary under ``root``."""
    stored = StoredProfile.read(root, executor)
    plan = stored_plan(stored.summary, out, **local, own_rate_rows=tuple(names))  # the names checked here
    cmp = Comparison(plan, log)
    check_same_setting(cmp.report, stored)
    added = measure(cmp, plan.own_rate_rows, log)
    summary, episodes = merged(stored, added, command)
    moved = changed_rows(stored.summary, summary)
    if moved:
        log(f"[add] stored rows whose numbers moved (failed episodes of a new row drop their pairs): {moved}")
    atomic_write_bytes(stored.folder / EPISODES_FILE, gzip_lines(episodes))
    atomic_write_text(stored.folder / SUMMARY_FILE, json.dumps(summary, indent=1, default=str) + "\n")
    return stored.folder
