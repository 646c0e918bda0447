"""The ``local`` pool: items run in this process, in order, on a setup built once per (equal) job."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .base import Job, PoolConfig, RolloutPool, WorkerCache


class LocalPool(RolloutPool):
    kind = "local"

    def __init__(self, config: PoolConfig | None = None) -> None:
        super().__init__(config or PoolConfig())
        self._cache = WorkerCache()

    def _unordered(self, job: Job, items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        # keyed by the setup object itself: equal frozen dataclasses share one env, a given env object is its own key
        try:
            key: Any = (hash(job.setup), job.setup)
        except TypeError:  # an unhashable setup is reused only as the same object
            key = ("id", id(job.setup))
        state = self._cache.state(key, job)
        for position, item in enumerate(items):
            yield position, job.run(state, item)
