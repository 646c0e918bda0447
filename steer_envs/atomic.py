"""Atomic file writes: a file is either the old version or the complete new one, never half of either.

Why: run folders (checkpoints, configs, metrics, tables) must survive a kill at any instant, including in the
middle of a write, so that ``--resume`` and re-running a command always find complete files. Each write goes
to a temporary file in the same folder, is flushed and fsync'ed, then renamed over the target (``os.replace``
is atomic on POSIX and Windows); the folder itself is fsync'ed so the rename survives a power cut too.

``$STEER_ENVS_KILL_DURING_WRITE=N`` is fault injection for the interruption tests: the N-th atomic write of
the process SIGKILLs it after writing half of the new bytes, before the rename (a real hard kill at the worst
moment, reproducibly placed).
"""
from __future__ import annotations

import io
import json
import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

KILL_DURING_WRITE_ENV = "STEER_ENVS_KILL_DURING_WRITE"
_writes_this_process = 0


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open folders; the rename is still atomic there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _kill_point() -> bool:
    """Count this write; whether the fault injection asks to die in the middle of it."""
    global _writes_this_process
    _writes_this_process += 1
    limit = os.environ.get(KILL_DURING_WRITE_ENV)
    return bool(limit) and _writes_this_process == int(limit)


def atomic_write_bytes(path: str | os.PathLike, write: bytes | Callable[[IO[bytes]], Any]) -> None:
    """Write ``path`` atomically. ``write`` is the bytes, or a function writing to a binary file object."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if _kill_point():
                buffer = io.BytesIO()
                write(buffer) if callable(write) else buffer.write(write)
                fh.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
                fh.flush()
                os.fsync(fh.fileno())
                os.kill(os.getpid(), signal.SIGKILL)
            if callable(write):
                write(fh)
            else:
                fh.write(write)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, *, sort_keys: bool = True, indent: int | None = 2) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent, sort_keys=sort_keys) + "\n")


def remove_stale_temporaries(folder: str | os.PathLike) -> int:
    """Delete temporary files a killed writer left in ``folder`` (``.<name>.<random>.tmp``); returns how many."""
    removed = 0
    for tmp in Path(folder).glob(".*.tmp"):
        tmp.unlink(missing_ok=True)
        removed += 1
    return removed
