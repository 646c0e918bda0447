"""Where a page's numbers came from: the command, the date, the code version and the machine, and the run folders.

The code version comes from :func:`benchmarks.harness.provenance.code_version`, the suite's one git helper (the
harness records it for every evaluation in ``runs.jsonl``); pages never shell out to git themselves.
"""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Iterable
from pathlib import Path

from benchmarks.harness.provenance import code_version, commits_of  # noqa: F401  (re-exported: the one git helper)
from benchmarks.harness.setting import folder_line


def today() -> str:
    return _dt.date.today().isoformat()


def machine_line() -> str:
    """``Python 3.11.9, x86_64``."""
    return f"Python {platform.python_version()}, {platform.machine()}"


def folder_list(folders: Iterable[str | Path]) -> str:
    """One bullet per run folder that exists (path, split, commits)."""
    return "".join(f"- {folder_line(Path(f))}\n" for f in folders if (Path(f) / "config.json").is_file())
