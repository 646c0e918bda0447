"""Where a number came from: the commit that produced it and the split it was measured on.

Every :func:`~.runner.evaluate` call that runs episodes appends one line to ``RUN_DIR/runs.jsonl`` (method label,
split, commit, whether the tree had uncommitted changes, date, episodes run), so a results page can list, for
every table, which code evaluated which split, and a reader can check that test was run for the reported numbers
only (dev for choosing, test once).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import subprocess
from collections.abc import Sequence
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


#: what stands for the folder a recorded command's run folders lived in (a machine path means nothing elsewhere)
RUNS_PLACEHOLDER = "RUNS"


def portable_command(prefix: str, argv: Sequence[str]) -> str:
    """``prefix`` and ``argv`` as a command a summary records: a path inside the repository relative to it, any
    other absolute path under :data:`RUNS_PLACEHOLDER` (relative to the folder the command's paths share), so a
    committed summary names no machine's folders. ``--flag=/path`` words are rewritten the same way."""
    words = [list(w.partition("=")) if w.startswith("--") and "=" in w else ["", "", w] for w in argv]
    outside = [w[2] for w in words if Path(w[2]).is_absolute() and not Path(w[2]).resolve().is_relative_to(REPO_ROOT)]
    base = None
    if outside:
        common = Path(os.path.commonpath(outside))
        base = common.parent if str(common) in outside else common

    def shown(value: str) -> str:
        path = Path(value)
        if not path.is_absolute():
            return value
        if path.resolve().is_relative_to(REPO_ROOT):
            return str(path.resolve().relative_to(REPO_ROOT))
        return f"{RUNS_PLACEHOLDER}/{path.relative_to(base)}" if base is not None else value

    return " ".join([prefix, *(shlex.quote(flag + eq + shown(value)) for flag, eq, value in words)])
