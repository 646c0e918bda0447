"""Wall times of a page's steps, summed over resumed regenerations (one JSON file in the run folder)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from steer_envs.atomic import atomic_write_text

T = TypeVar("T")


def wall(seconds: float) -> str:
    """``42 s`` below two minutes, else ``3.5 min``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def read_times(path: Path) -> dict[str, float]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def add_time(path: Path, key: str, seconds: float) -> float:
    """Add ``seconds`` to step ``key`` in the JSON file ``path`` (written atomically); return the step's total."""
    times = read_times(path)
    times[key] = times.get(key, 0.0) + seconds
    atomic_write_text(path, json.dumps(times, indent=2) + "\n")
    return times[key]


def timed(path: Path, key: str, fn: Callable[[], T], on_update: Callable[[dict[str, Any]], None] | None = None) -> T:
    """Run ``fn`` and add its wall time to ``key`` in ``path``, even when it raises (a resumed run adds on)."""
    start = time.perf_counter()
    try:
        return fn()
    finally:
        add_time(path, key, time.perf_counter() - start)
        if on_update is not None:
            on_update(read_times(path))
