"""Where a number came from: the commit that produced it and the split it was measured on.

Every :func:`~.runner.evaluate` call that runs episodes appends one line to ``RUN_DIR/runs.jsonl`` (method label,
split, commit, whether the tree had uncommitted changes, date, episodes run, and the repository files the process had
loaded by then), so a results page can list, for every table, which code evaluated which split, a reader can check
that test was run for the reported numbers only (dev for choosing, test once), and a maintainer can tell whether
the code a number depends on changed since (:func:`code_record`, read by ``python -m benchmarks.pages.freshness``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
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


#: the data files beside a loaded module that its numbers can depend on (a simulator profile, a catalogue)
DATA_SUFFIXES = (".json", ".toml", ".txt", ".yaml")


def loaded_files(modules: Iterable[object] | None = None) -> tuple[str, ...]:
    """The repository files this process's numbers can depend on: every imported module's source file inside the
    repository's packages (relative to the repository), and the data files (:data:`DATA_SUFFIXES`) beside them: in
    a module's folder and in the folders under it that hold no modules (a simulator's profiles, a page's
    templates)."""
    root = REPO_ROOT.resolve()
    files: set[str] = set()
    folders: set[Path] = set()
    for module in list(sys.modules.values()) if modules is None else modules:
        path = getattr(module, "__file__", None)
        if not path:
            continue
        resolved = Path(path)
        if not resolved.is_absolute():  # a frozen or built-in module's name, not a file (``_classes.py``)
            continue
        resolved = resolved.resolve()
        if resolved.is_relative_to(root) and resolved.suffix == ".py" and resolved.is_file():
            files.add(resolved.relative_to(root).as_posix())
            if resolved.parent != root:  # the repository's own folder holds its configuration, not data
                folders.add(resolved.parent)
    for folder in folders:
        for data in _data_files(folder):
            files.add(data.relative_to(root).as_posix())
    return tuple(sorted(files))


def _data_files(folder: Path) -> Iterator[Path]:
    for path in folder.iterdir():
        if path.is_file() and path.suffix in DATA_SUFFIXES:
            yield path
        elif path.is_dir() and not path.name.startswith((".", "__")) and not any(path.glob("*.py")):
            yield from _data_files(path)


@dataclass(frozen=True)
class RunEntry:
    """One evaluation call: what ran, on which split, with which code (``files``: :func:`loaded_files` when it
    finished)."""

    label: str
    split: str
    commit: str
    episodes: int
    date: str
    files: tuple[str, ...] = ()


def record_run(root: str | Path, label: str, split: str, episodes: int) -> RunEntry:
    date = _dt.datetime.now().isoformat(timespec="seconds")
    entry = RunEntry(label, split, code_version(), episodes, date, loaded_files())
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
            data = json.loads(line)
            entries.append(RunEntry(**{**data, "files": tuple(data.get("files", ()))}))
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


def code_record(roots: Iterable[str | Path] = (), extra_commits: Iterable[str] = ()) -> dict[str, object]:
    """What a committed summary records of the code behind its numbers: the commits that evaluated its run folders
    (``roots``; ``extra_commits`` for work done outside them, in order of first use), whether every one was a clean
    tree, and the repository files the runs loaded (this process's too). ``python -m benchmarks.pages.freshness``
    flags a summary whose files changed after its first commit."""
    files: set[str] = set(loaded_files())
    used: list[str] = []
    for root in roots:
        for entry in read_runs(root):
            files.update(entry.files)
            used.append(entry.commit)
    commits = list(dict.fromkeys([*used, *extra_commits]))
    clean = bool(commits) and not any(c.endswith("+dirty") or c == "unknown" for c in commits)
    return {"commits": commits, "clean": clean, "files": sorted(files)}


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
