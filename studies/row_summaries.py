"""Where a study that evaluates rows writes what it found: its summary beside every test episode it scored.

A page rebuilds from the repository alone, and a reader checks a summary's rows and intervals against the episodes
that made them, so a study commits both: ``summary.json`` and ``episodes.jsonl.gz`` (one line an episode, tagged
with its row and training run, in the harness's episode fields).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.harness.results_summary import EPISODE_FIELDS, EPISODES_FILE, gzip_lines
from benchmarks.harness.stats import RowRuns
from steer_envs.atomic import atomic_write_bytes, atomic_write_text

SUMMARY = "summary.json"


def write_row_summary(dest: Path, summary: dict[str, Any], rows: dict[str, RowRuns]) -> Path:
    """Write ``summary`` and every episode of ``rows`` into ``dest`` (made if missing); the summary's path."""
    dest.mkdir(parents=True, exist_ok=True)
    episodes = [
        {"row": row, "run": label, **{k: getattr(r, k) for k in EPISODE_FIELDS}}
        for row, runs in rows.items()
        for label, records in runs.runs.items()
        for r in records
    ]
    atomic_write_bytes(dest / EPISODES_FILE, gzip_lines(episodes))
    atomic_write_text(dest / SUMMARY, json.dumps(summary, indent=1) + "\n")
    return dest / SUMMARY
