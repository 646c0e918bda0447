"""Where a number came from: the commit that produced it and the split it was measured on.

Every :func:`~.runner.evaluate` call that runs episodes appends one line to ``RUN_DIR/runs.jsonl`` (method label,
split, commit, whether the tree had uncommitted changes, date, episodes run), so a results page can list, for
every table, which code evaluated which split, and a reader can check that test was run for the reported numbers
only (dev for choosing, test once).
"""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from steer_envs.paths import REPO_ROOT

RUNS_FILE = "runs.jsonl"


@lru_cache(maxsize=1)
def code_version() -> str:
    """``<short commit>`` of the repository, with ``+dirty`` when tracked files differ from it; ``unknown``
    outside a git checkout (an installed wheel)."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if status else "")


@dataclass(frozen=True)
class RunEntry:
    """One evaluation call: what ran, on which split, with which code."""

    label: str
    split: str
    commit: str
    episodes: int
    date: str


def record_run(root: str | Path, label: str, split: str, episodes: int) -> RunEntry:
    entry = RunEntry(label, split, code_version(), episodes, _dt.datetime.now().isoformat(timespec="seconds"))
    with open(Path(root) / RUNS_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(asdict(entry), sort_keys=True) + "\n")
    return entry


def read_runs(root: str | Path) -> list[RunEntry]:
    path = Path(root) / RUNS_FILE
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(RunEntry(**json.loads(line)))
        except (ValueError, TypeError):
            continue  # a torn last line of a killed run
    return entries


def commits_of(root: str | Path) -> list[str]:
    """The distinct code versions that evaluated episodes in a run folder, in order of first use."""
    seen: list[str] = []
    for entry in read_runs(root):
        if entry.commit not in seen:
            seen.append(entry.commit)
    return seen
