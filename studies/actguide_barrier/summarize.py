"""The study's compact summary, from its ``OUT`` folder only: ``python -m studies.actguide_barrier.summarize OUT``.

Success is EM, a mean over the tasks' rollouts (x100); Pass@K is the share of tasks with any success. Intervals are
the harness's (:class:`benchmarks.harness.stats.HierarchicalBootstrap`: tasks resampled within benchmarks, the
same draw for both rows of a comparison, training seeds resampled per row; the real benchmarks' average is their
macro mean). A level's interval (a row against 0) is the same bootstrap against a row of zeros.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import pkgutil
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.harness.provenance import code_record, code_version
from benchmarks.harness.results_summary import gzip_lines
from benchmarks.harness.stats import HierarchicalBootstrap, Interval, RowRuns
from steer_envs.atomic import atomic_write_bytes, atomic_write_json
from steer_envs.data.tasks import BENCHMARKS
from steer_envs.episodes import EpisodeRecord

from .run import ABLATIONS, DONE, FAMILY, GROUPS, MAIN, SELECT, Plan, planned_commands

RESULTS = Path(__file__).resolve().parent / "results"
#: beside the summary: every test episode its groups' levels and gains are computed from (:func:`eval_rows`)
EPISODES_FILE = "episodes.jsonl.gz"
#: the fields of a stored episode (with ``label``, ``run`` and ``group``): what :func:`compare` reads
STORED_FIELDS = ("task_id", "benchmark", "seed", "f1", "em", "reward", "failed")


def _interval(i: Interval) -> list[float]:
    return [round(i.mean, 2), round(i.low, 2), round(i.high, 2)]


def read_records(path: Path) -> list[EpisodeRecord]:
    return [EpisodeRecord(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def passes(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """One record per task: em = 1 when any of its rollouts succeeded (Pass@K as a row of the harness)."""
    by_task: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if not r.failed:
            by_task[r.task_id].append(r)
    out = []
    for _task, rs in sorted(by_task.items()):
        v = float(any(r.reward > 0 for r in rs))
        out.append(replace(rs[0], seed=0, em=v, f1=v, reward=v))
    return out


def zeros(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return [replace(r, em=0.0, f1=0.0, reward=0.0, method="zero") for r in records]


def benchmarks_of(group: str) -> list[str]:
    return [FAMILY] if group == "family" else list(BENCHMARKS)


def _runs(out: Path, label: str, group: str, split: str, n: int, seeds: int) -> dict[str, list[EpisodeRecord]]:
    """label's evaluation records per training seed (``base``: one run)."""
    if label == "base":
        path = out / "eval" / f"base.{group}.{split}.n{n}.jsonl"
        return {"base": read_records(path)} if path.is_file() else {}
    runs = {}
    for s in range(seeds):
        path = out / "eval" / f"{label}.seed{s}.{group}.{split}.n{n}.jsonl"
        if path.is_file():
            runs[f"{label}.seed{s}"] = read_records(path)
    return runs


def compare(rows: dict[str, dict[str, list[EpisodeRecord]]], group: str, pairs: Sequence[tuple[str, str]]) -> dict:
    """Levels (success and Pass@K, with intervals against 0) of every row and paired gains of ``pairs``."""
    rows = {k: v for k, v in rows.items() if v}
    if not rows:
        return {}
    bench = benchmarks_of(group)
    out: dict = {"levels": {}, "gains": {}}
    for measure, transform in (("success", list), ("pass", passes)):
        built = [RowRuns(name, {lab: transform(recs) for lab, recs in runs.items()}) for name, runs in rows.items()]
        first = next(iter(built[0].runs.values()))
        built.append(RowRuns("zero", {"zero": zeros(first)}))
        boot = HierarchicalBootstrap(built, bench, attr="em")
        for name in rows:
            level = out["levels"].setdefault(name, {"seeds": len(rows[name]), "tasks": len({r.task_id for r in first})})
            level[measure] = _interval(boot.gain(name, "zero")[1])
            if measure == "success":
                level["per_seed"] = [
                    round(float(np.mean([r.em for r in recs])) * 100, 2) for recs in rows[name].values()
                ]
        for a, b in pairs:
            if a in rows and b in rows:
                out["gains"].setdefault(f"{a} - {b}", {})[measure] = _interval(boot.gain(a, b)[1])
    return out


def _prefix_gains(report: dict) -> dict:
    """Prefix-level Pass@K at k against k = 0, and M_t against 0, per task with the harness's bootstrap."""

    def records(values: Sequence[float], method: str) -> list[EpisodeRecord]:
        return [EpisodeRecord(method, f"t{i}", FAMILY, 0, float(v), float(v), float(v)) for i, v in enumerate(values)]

    out: dict = {"prefix": {}, "prompt": {}, "M": {}}
    for kind in ("prefix", "prompt"):
        by_k = {int(k): v for k, v in report.get(f"{kind}_by_task", {}).items()}
        if 0 not in by_k:
            continue
        same = [k for k, v in by_k.items() if len(v) == len(by_k[0])]  # a task a failure left out breaks pairing
        boot = HierarchicalBootstrap([RowRuns(f"k{k}", {f"k{k}": records(by_k[k], f"k{k}")}) for k in same], [FAMILY])
        out[kind] = {k: _interval(boot.gain(f"k{k}", "k0")[1]) for k in same}
    potentials = np.asarray(report.get("potential_by_task", []), dtype=float)
    if potentials.size:
        rows = []
        for t in range(potentials.shape[1]):
            col = np.nan_to_num(potentials[:, t])
            rows.append(RowRuns(f"M{t}", {f"M{t}": records(col, f"M{t}")}))
        rows.append(RowRuns("zero", {"zero": records(np.zeros(potentials.shape[0]), "zero")}))
        boot = HierarchicalBootstrap(rows, [FAMILY], attr="em")
        out["M"] = {t: _interval(boot.gain(f"M{t}", "zero")[1]) for t in range(potentials.shape[1])}
    return out


def barrier_reports(out: Path) -> dict:
    """``steer-envs barrier`` reports by model (``base``, ``zero_rl``, ``actguide``: seed 0), means and intervals."""
    names = {"base_zero_rl": ("base", "zero_rl"), "actguide": ("actguide",)}
    result = {}
    for folder, labels in names.items():
        path = out / "barrier" / folder / "barrier.json"
        if not path.is_file():
            continue
        for label, report in zip(labels, json.loads(path.read_text()), strict=False):
            per_task = ("prefix_by_task", "prompt_by_task", "potential_by_task", "label")
            compact = {k: v for k, v in report.items() if k not in per_task}
            result[label] = {**compact, "intervals": _prefix_gains(report)}
    return result


def training_logs(out: Path, variants: Sequence[str], seeds: int) -> dict:
    """Where each variant's budget went (means over its seeds): rollouts, probes, guided, rescued groups."""
    result = {}
    for v in variants:
        rows = []
        for s in range(seeds):
            path = out / "runs" / v / f"seed{s}" / "log.jsonl"
            if not path.is_file() or not (path.parent / DONE).is_file():  # finished runs only
                continue
            log = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            total = sum(r.get("rollouts", 0) for r in log)
            probes = sum(r.get("probe_rollouts", 0) for r in log)
            guided_groups = sum(r.get("guided_groups", 0) for r in log)
            rescued = sum(r.get("rescued_groups", 0) for r in log)
            family_rescued = sum(1 for r in log for t in r.get("rescued_tasks", []) if str(t).startswith(FAMILY))
            guided = [r for r in log if r.get("guided_groups", 0) > 0]
            rows.append(
                {
                    "iterations": len(log),
                    "budget_used": log[-1].get("budget_used", 0) if log else 0,
                    "rollouts": total,
                    "probe_rollouts": probes,
                    "guided_groups": guided_groups,
                    "rescued_groups": rescued,
                    "family_rescued": family_rescued,
                    # per trained token, means over the iterations with guided groups: how hard the update pushed
                    # π_u toward the guided actions (positive advantages) and away from them (negative ones)
                    "guided_push_up": float(np.mean([r.get("guided_push_up", 0.0) for r in guided])) if guided else 0.0,
                    "guided_push_down": float(np.mean([r.get("guided_push_down", 0.0) for r in guided]))
                    if guided
                    else 0.0,
                    "r_mix": float(np.mean([r.get("r_mix", 0.0) for r in guided])) if guided else 0.0,
                }
            )
        if rows:
            result[v] = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]} | {"seeds": len(rows)}
    return result


def _times(out: Path) -> dict[str, float]:
    """Wall seconds per kind of step, summed over the pipeline's time files (one per set of stages run)."""
    total: dict[str, float] = defaultdict(float)
    for path in sorted(out.glob("times*.json")):
        for key, value in json.loads(path.read_text()).items():
            total[key] += float(value)
    return dict(total)


LONGER = tuple(f"{v}_longer" for v in MAIN)
#: the rows every group compares: each against zero RL and the method, the longer runs against both budgets
PAIRS = (
    ("zero_rl", "base"),
    ("actguide", "zero_rl"),
    ("actguide", "base"),
    *((a, "actguide") for a in (*SELECT, *ABLATIONS)),
    *((a, "zero_rl") for a in (*SELECT, *ABLATIONS)),
    ("actguide_longer", "zero_rl_longer"),
    ("actguide_longer", "actguide"),
    ("zero_rl_longer", "zero_rl"),
)


def eval_rows(out: Path, plan: dict) -> dict[str, dict[str, dict[str, list[EpisodeRecord]]]]:
    """Every label's test evaluation records per training run, per group (``family``, ``real``)."""
    split, n, seeds = plan["eval_split"], plan["eval_rollouts"], plan["seeds"]
    labels = ["base", *MAIN, *SELECT, *ABLATIONS, *LONGER]

    def seeds_of(label: str) -> int:
        return seeds if label in (*MAIN, *SELECT) else 1 if label in LONGER else plan["ablation_seeds"]

    return {group: {label: _runs(out, label, group, split, n, seeds_of(label)) for label in labels} for group in GROUPS}


def write_episodes(groups: dict[str, dict[str, dict[str, list[EpisodeRecord]]]], path: Path) -> None:
    """The records of :func:`eval_rows`, one line each (:data:`STORED_FIELDS` with label, run and group), gzipped
    with a fixed header time so the same records give the same bytes."""
    lines = []
    for group, rows in groups.items():
        for label, runs in rows.items():
            for run, records in runs.items():
                for r in records:
                    stored = {"group": group, "label": label, "run": run, **{k: getattr(r, k) for k in STORED_FIELDS}}
                    lines.append(dict(sorted(stored.items())))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, gzip_lines(lines))


def read_episodes(path: Path) -> dict[str, dict[str, dict[str, list[EpisodeRecord]]]]:
    """What :func:`write_episodes` stored, in the shape :func:`eval_rows` returns (records in stored order)."""
    groups: dict[str, dict[str, dict[str, list[EpisodeRecord]]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            record = EpisodeRecord(d["label"], **{k: d[k] for k in STORED_FIELDS})
            groups.setdefault(d["group"], {}).setdefault(d["label"], {}).setdefault(d["run"], []).append(record)
    return groups


def code_files() -> dict[str, object]:
    """The code behind the study (:func:`~benchmarks.harness.provenance.code_record`): its training and evaluation
    run in child processes (``steer-envs train actguide``, ``steer-envs barrier``), so the console script's modules
    (``steer_envs.cli.main`` and the commands ``agents.cli`` registers) and every module of ``agents.actguide`` are
    imported here first and the files this process has then loaded stand for theirs; the commit is this checkout's
    (``+dirty`` when it has uncommitted changes)."""
    import agents.actguide

    for name in ("steer_envs.cli.main", "agents.cli"):
        importlib.import_module(name)
    for info in pkgutil.walk_packages(agents.actguide.__path__, "agents.actguide."):
        importlib.import_module(info.name)
    return code_record(extra_commits=[code_version()])


def summarize(out: Path, episodes_to: Path | None = None) -> dict:
    """The compact summary of the pipeline's ``out`` folder; its test episodes go to ``episodes_to`` (default: ``out``
    itself)."""
    out = Path(out)
    plan = json.loads((out / "plan.json").read_text())
    split, n, seeds = plan["eval_split"], plan["eval_rollouts"], plan["seeds"]
    summary: dict = {
        "code": code_files(),
        "plan": plan,
        "times_s": _times(out),
        "commands": planned_commands(Plan(out, **{k: v for k, v in plan.items() if k != "out"})),
        "base_pass": {},
        "groups": {},
        "barrier": barrier_reports(out),
        "training": training_logs(out, [*MAIN, *SELECT, *ABLATIONS, *LONGER], seeds),
        "alignment": {},
        "dev": {},
        "selection": {},
        "episodes": {"file": EPISODES_FILE, "fields": ["group", "label", "run", *STORED_FIELDS]},
    }
    dev_split = plan.get("dev_split", "dev")
    if (out / "choice.json").is_file():
        from .selection import dev_groups

        summary["dev"] = dev_groups(out, dev_split, n, seeds)
        summary["selection"] = json.loads((out / "choice.json").read_text())
    for s in ("dev", split):
        runs = _runs(out, "base", "family", s, plan["base_pass_k"], 1)
        if runs:
            summary["base_pass"][s] = compare({"base": runs}, "family", [])["levels"]["base"] | {
                "K": plan["base_pass_k"]
            }
    groups = eval_rows(out, plan)
    for group, rows in groups.items():
        summary["groups"][group] = compare(rows, group, PAIRS)
    write_episodes(groups, episodes_to or out / EPISODES_FILE)
    for path in sorted((out / "alignment").glob(f"*.{split}.json")) if (out / "alignment").is_dir() else []:
        summary["alignment"][path.name.removesuffix(f".{split}.json")] = json.loads(path.read_text())
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the study's compact summary from its OUT folder")
    parser.add_argument("out", help="the pipeline's --out folder")
    parser.add_argument("--to", default=str(RESULTS / "summary.json"), help="where the summary goes")
    args = parser.parse_args(argv)
    to = Path(args.to)
    atomic_write_json(to, summarize(Path(args.out), episodes_to=to.parent / EPISODES_FILE))
    print(f"written: {args.to}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
