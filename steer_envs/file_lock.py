"""One process at a time across the machine: an exclusive ``flock`` on a lock file beside what it guards.

Why: some work writes one shared folder of the cache and is too costly to do twice at once (converting the packaged
model, installing the vLLM CPU build); test processes, env workers, or a server and its client may start it
together. The lock is released when the block ends or the process dies, so a killed holder never blocks the next.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_file: str | os.PathLike) -> Iterator[None]:
    """Hold ``lock_file`` (created, with its folder, if missing) exclusively for the block; waits for a holder."""
    path = Path(lock_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
