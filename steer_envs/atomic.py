"""Atomic file writes: a file is either the old version or the complete new one, never half of either.

Why: run folders (checkpoints, configs, metrics, tables) must survive a kill at any instant, including in the
middle of a write, so that ``--resume`` and re-running a command always find complete files. Each write goes
to a temporary file in the same folder, is flushed and fsync'ed, then renamed over the target (``os.replace``
is atomic on POSIX and Windows); the folder itself is fsync'ed so the rename survives a power cut too.

Ctrl-C and SIGTERM arriving during a write are held until the file is in place, then delivered: an interrupt
raised inside a serializer's callbacks (``torch.save`` writes through Python) leaves the serializer in a broken
state and turns a clean stop into a traceback.

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
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    if not limit:
        return False
    return _writes_this_process == int(limit)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT / SIGTERM for the duration of the block, then deliver them (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: received.append(signum))
        except (ValueError, OSError):  # an embedding application owns the signals
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in received:
            signal.raise_signal(signum)  # now, to the restored handler (KeyboardInterrupt, or the default action)


def atomic_write_bytes(path: str | os.PathLike, write: bytes | Callable[[IO[bytes]], Any]) -> None:
    """Write ``path`` atomically. ``write`` is the bytes, or a function writing to a binary file object."""
    with interrupts_deferred():
        _write_and_rename(Path(path), write)


def _write_and_rename(path: Path, write: bytes | Callable[[IO[bytes]], Any]) -> None:
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
