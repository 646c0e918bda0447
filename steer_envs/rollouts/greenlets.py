"""The ``greenlets`` pool: many items in flight on the calling thread, each a task of a
:class:`~steer_envs.cooperative.Hub` that yields while its model request is out.

Why: an evaluation episode on an ``openai:`` executor is a few milliseconds of Python spread around seconds of
waiting on the model server. The ``threads`` pool keeps as many episodes in flight, but each request then hands the
interpreter lock between threads several times, which at hundreds of requests a second costs more client CPU than
the episodes' own work (see :mod:`steer_envs.cooperative`). Here one thread runs every episode in flight and wakes
them as their replies arrive. :func:`~steer_envs.rollouts.concurrent_pool` picks it for executor kinds whose waits
yield (:func:`~steer_envs.executors.registry.waits_cooperatively`), sized like the threads pool: as many items in
flight as the backend lets requests reach the server.

Each item in flight runs on an env replica of its own (the job unpickled per replica, as a thread or a worker
process would), so results equal the local pool's, in item order, whatever the number of items in flight.
"""

from __future__ import annotations

import functools
import pickle
import traceback
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from ..cooperative import Hub, TaskQueue
from .base import Job, PoolConfig, PoolError, RolloutPool, WorkerCache, job_bytes
from .threads import FALLBACK_THREADS, threads_for

#: jobs whose replicas a pool keeps between calls (a trainer's rounds each bring a new job)
KEPT_JOBS = 4


class GreenletPool(RolloutPool):
    kind = "greenlets"

    def __init__(self, config: PoolConfig | None = None) -> None:
        super().__init__(config or PoolConfig("greenlets", workers=0))
        self._hub: Hub | None = None  # made on the first call, on the thread that drives the pool
        self._size: int | None = self.config.workers or None
        #: per job key: replicas not running an item now (each a job copy and the state its setup built)
        self._idle: OrderedDict[str, list[tuple[Job, WorkerCache]]] = OrderedDict()

    @property
    def workers(self) -> int:
        """Items in flight at most (for ``workers=0``: known once the first job came, else the fallback)."""
        return self._size or FALLBACK_THREADS

    def _replica(self, key: str, data: bytes) -> tuple[Job, WorkerCache]:
        idle = self._idle.setdefault(key, [])
        self._idle.move_to_end(key)
        while len(self._idle) > KEPT_JOBS:
            self._idle.popitem(last=False)
        return idle.pop() if idle else (pickle.loads(data), WorkerCache(capacity=1))

    def _run(self, key: str, data: bytes, item: Any) -> Any:
        job, cache = self._replica(key, data)
        result = job.run(cache.state(key, job), item)
        self._idle.setdefault(key, []).append((job, cache))  # a replica whose item raised is dropped
        return result

    def _unordered(self, job: Job, items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        key, data = job_bytes(job)
        if self._size is None:
            self._size = threads_for(job)
        self._hub = self._hub or Hub()
        queue = TaskQueue(self.workers, self._hub)
        for position, item in enumerate(items):
            queue.submit(position, functools.partial(self._run, key, data, item))
        try:
            while queue.busy:
                position, task = queue.next()
                if task.error is not None:
                    raise PoolError(
                        f"item {position} failed in a rollout task:\n" + "".join(traceback.format_exception(task.error))
                    ) from task.error
                yield position, task.result
        finally:  # stopped early (an error, the caller broke off): items not started never start, running ones stop
            queue.cancel()

    def close(self) -> None:
        if self._hub is not None:
            self._hub.close()
            self._hub = None
        self._idle.clear()
