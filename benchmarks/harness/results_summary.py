"""The compact summary of one profile's rate-matched comparison: what ``docs/results.md`` is rebuilt from.

A comparison's run folder holds checkpoints, every dev probe's episodes and the curves' episodes: far too much to
commit, and a machine that runs one part of the work need not keep it. When a profile's comparison is finished, the
results generator (:mod:`.results_doc`) writes its summary into the repository (``docs/results/main/<profile>/``):

* ``summary.json``: the command and options, the setting card, every row's dev choice and measured budget, the
  table's summaries, paired intervals (the focus row against every row; every row against the reference and against
  the protocol's bar), the rate curves (each knob swept around its dev choice), the fast path's
  Spearman, the dev choices behind every knob (each probe's dev rate, the fixed rules' dev table, the budget match),
  and the wall time of each part of the run (a run resumed on another machine is another part);
* ``episodes.jsonl.gz``: one line per test episode of every row (label, task, benchmark, seed, F1, EM,
  interventions, executor turns, failed), the evidence behind every number of the table;
* ``rate_curves.png``: the rate-curve plot.

The page builder (:mod:`benchmarks.pages.results`) reads only these files, so ``steer-envs report results`` rebuilds
the page without any run folder. Rows measured later are added to both files by :mod:`.summary_rows` (paired with
the stored episodes, whose (task id, seed index) is what pairs them).
"""

from __future__ import annotations

import datetime as _dt
import gzip
import io
import json
import os
import platform
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from steer_envs.atomic import atomic_write_bytes, atomic_write_text
from steer_envs.episodes import EpisodeLog
from steer_envs.paths import REPO_ROOT

from .comparison import Comparison, Row, _summary_dict
from .provenance import RUNS_FILE, code_record, read_runs
from .runfolder import RunFolder
from .runner import REFERENCE
from .stats import HierarchicalBootstrap
from .sweeps import executor_dirname

#: where the committed summaries live, one folder per profile (``steer-envs report results`` reads them here)
SUMMARY_ROOT = REPO_ROOT / "docs" / "results" / "main"
SUMMARY_FILE = "summary.json"
EPISODES_FILE = "episodes.jsonl.gz"
PLOT_FILE = "rate_curves.png"
PARTS_FILE = "parts.json"
LLM_DIR = "llm"
#: the per-episode fields kept (what every table number is computed from)
EPISODE_FIELDS = ("task_id", "benchmark", "seed", "f1", "em", "interventions", "executor_turns", "failed")
#: plan fields that only say where files went on the machine that ran it
LOCAL_FIELDS = ("out", "checkpoints", "data_dir", "progress", "pool", "seconds")


def profile_dir(root: Path, executor: str) -> Path:
    return Path(root) / executor_dirname(executor)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def machine() -> str:
    return f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPU cores"


def record_part(out: Path, start: str, before: dict[str, float], after: dict[str, float]) -> list[dict[str, Any]]:
    """Append one part (this invocation: when, where, seconds per step it added) to ``OUT/parts.json``."""
    path = Path(out) / PARTS_FILE
    parts = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    seconds = {k: round(v - before.get(k, 0.0), 1) for k, v in after.items() if v - before.get(k, 0.0) > 0.05}
    parts.append({"start": start, "end": now(), "machine": machine(), "seconds": seconds})
    atomic_write_text(path, json.dumps(parts, indent=2) + "\n")
    return parts


def _parts(cmp: Comparison) -> list[dict[str, Any]]:
    """The run's parts; time the wall-time file holds beyond the recorded parts is one more part, dated by the
    evaluations it ran (``runs.jsonl``)."""
    out = cmp.plan.out
    parts = json.loads((out / PARTS_FILE).read_text(encoding="utf-8")) if (out / PARTS_FILE).is_file() else []
    times_path = out / "wall_times.json"
    total = json.loads(times_path.read_text(encoding="utf-8")) if times_path.is_file() else {}
    rest = {k: round(v - sum(p["seconds"].get(k, 0.0) for p in parts), 1) for k, v in total.items()}
    rest = {k: v for k, v in rest.items() if v > 1.0}
    if rest:
        dates = sorted(e.date for f in (cmp.dev.root, cmp.report.root) for e in read_runs(f))
        first = {"start": dates[0] if dates else "", "end": dates[-1] if dates else "", "machine": "", "seconds": rest}
        parts = [first, *parts]
    return parts


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def episode_lines(folder: RunFolder, rows: dict[str, Row]) -> list[dict[str, Any]]:
    """``folder``'s episodes of every row on its tasks and seeds, one dict per episode (:data:`EPISODE_FIELDS`)."""
    expected = {(t.id, s) for t in folder.config.tasks() for s in range(folder.config.seeds)}
    lines = []
    for row in rows.values():
        for label in row.labels:
            for r in EpisodeLog(folder.episodes_path(label)).records:
                if (r.task_id, r.seed) in expected:
                    lines.append({"row": row.name, "label": label, **{k: getattr(r, k) for k in EPISODE_FIELDS}})
    return lines


def gzip_lines(lines: list[dict[str, Any]]) -> bytes:
    """gzip'd JSONL with deterministic bytes (no timestamp in the header)."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        gz.write(("\n".join(json.dumps(line) for line in lines) + "\n").encode("utf-8"))
    return buf.getvalue()


def episodes_bytes(cmp: Comparison) -> tuple[bytes, int]:
    """The report split's episodes of every row as gzip'd JSONL."""
    lines = episode_lines(cmp.report, cmp.rows)
    return gzip_lines(lines), len(lines)


def read_episodes(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def against(
    names: list[str], boot: HierarchicalBootstrap, reference: str = REFERENCE, bar: str = ""
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every row against the reference (no supervision) and against the protocol's bar (the best fixed rule; none
    when ``bar`` is empty or not a row), paired, training seeds of both rows resampled: the summary's ``vs_none``
    and ``vs_rule``."""
    vs_none = [{"a": n, "b": reference, **asdict(boot.gain(n, reference)[1])} for n in names if n != reference]
    vs_rule = [{"a": n, "b": bar, **asdict(boot.gain(n, bar)[1])} for n in names if bar in names and n != bar]
    return vs_none, vs_rule


def write_profile_summary(cmp: Comparison, root: Path, command: str, options: dict[str, Any]) -> Path:
    """Write ``root/<profile>/`` from a finished comparison (its ``comparison.json`` and run folders)."""
    p = cmp.plan
    data = json.loads((p.out / "comparison.json").read_text(encoding="utf-8"))
    summaries, boot = cmp.summaries()
    vs_none, vs_rule = against([s.method for s in summaries], boot, p.reference, p.bar)
    rule_dir = cmp.dev.checkpoint_dir(cmp.rows[p.bar].labels[0]) if p.bar in cmp.rows else None
    dest = profile_dir(root, p.executor)
    dest.mkdir(parents=True, exist_ok=True)
    blob, count = episodes_bytes(cmp)
    atomic_write_bytes(dest / EPISODES_FILE, blob)
    plot = p.out / "plots" / "rate_curves.png"
    if plot.is_file():
        shutil.copyfile(plot, dest / PLOT_FILE)
    summary = {
        "executor": p.executor,
        "command": command,
        "options": options,
        # the commits and files behind every evaluation of the run (``python -m benchmarks.pages.freshness``)
        "code": code_record(sorted({path.parent for path in p.out.rglob(RUNS_FILE)})),
        "written": now(),
        "plan": {k: v for k, v in data["plan"].items() if k not in LOCAL_FIELDS},
        "benchmarks": list(cmp.report.config.benchmarks),
        "card": data["card"],
        "rows": data["rows"],
        "summaries": [_summary_dict(s) for s in summaries],
        "pairwise": data["pairwise"],
        "vs_none": vs_none,
        "vs_rule": vs_rule,
        "curves": data.get("curves") or {},
        "spearman": data.get("spearman") or {},
        "plot": PLOT_FILE if plot.is_file() else None,
        "seconds": data.get("seconds") or {},
        "parts": _parts(cmp),
        "dev": {
            "choices": _json(cmp.dev.root / "choices.json"),
            "bar_selection": _json(rule_dir / "selection.json") if rule_dir else None,
            "budget_match": _json(p.out / "budget_match.json"),
        },
        "episodes": {"file": EPISODES_FILE, "count": count, "fields": ["row", "label", *EPISODE_FIELDS]},
    }
    atomic_write_text(dest / SUMMARY_FILE, json.dumps(summary, indent=1, sort_keys=False, default=str) + "\n")
    return dest


def read_summaries(root: Path, profiles: tuple[str, ...]) -> dict[str, dict[str, Any] | None]:
    """Each profile's summary (``None``: not summarised yet), in ``profiles`` order."""
    out: dict[str, dict[str, Any] | None] = {}
    for executor in profiles:
        path = profile_dir(root, executor) / SUMMARY_FILE
        out[executor] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    return out


def read_llm(root: Path) -> dict[str, Any] | None:
    path = Path(root) / LLM_DIR / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
