"""The ``threads`` pool: items run on threads of this process, each thread with its own env replica.

Why: an episode on an ``openai:`` executor spends nearly all its time waiting on the model server, so the
evaluation's episodes and the trainers' counterfactual continuations should be many in flight at once; worker
processes would each load the corpus, the BM25 index and the tasks to do it, threads share them (and the model
backend with its keep-alive connections and its ``max_in_flight`` bound). CPU-bound executors (the simulator, a
model in this process) gain nothing from threads, so :func:`~steer_envs.rollouts.concurrent_pool` picks this pool
only for I/O-bound executor kinds, with one thread per request the backend lets reach the server (its
``max_in_flight``, :func:`~steer_envs.rollouts.in_flight_of`): each thread carries one episode at a time, so the
episodes in flight are as many as the server may take, and none waits on a per-step barrier for the slowest.
``PoolConfig("threads", workers=0)`` (``--pool threads`` without ``--workers``) sizes itself the same way from the
executor of the first job it runs.

Every thread unpickles the job itself, as a worker process would, so its env replica and companion (a policy)
are its own and the results equal the local pool's, in item order, for any number of threads.
"""

from __future__ import annotations

import pickle
import threading
import traceback
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from queue import SimpleQueue
from typing import Any

from .base import Job, PoolConfig, PoolError, RolloutPool, WorkerCache, job_bytes

#: threads of a pool for an I/O-bound executor whose backend names no in-flight bound (a plugin's kind)
FALLBACK_THREADS = 16


def threads_for(job: Job) -> int:
    """The thread count for ``job`` when none was given: the in-flight bound of its env's executor."""
    from . import in_flight_of

    kwargs = dict(getattr(job.setup, "kwargs", ()) or ())
    return in_flight_of(kwargs.get("executor")) or FALLBACK_THREADS


class ThreadPool(RolloutPool):
    kind = "threads"

    def __init__(self, config: PoolConfig | None = None) -> None:
        super().__init__(config or PoolConfig("threads", workers=0))
        self._threads: ThreadPoolExecutor | None = None
        self._size: int | None = None
        if self.config.workers:
            self._start(self.config.workers)
        self._local = threading.local()

    def _start(self, workers: int) -> ThreadPoolExecutor:
        self._size = workers
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="steer-rollout")
        return self._threads

    @property
    def workers(self) -> int:
        """Threads of the pool (for ``workers=0``: known once the first job came, else the fallback)."""
        return self._size or self.config.workers or FALLBACK_THREADS

    def _run(self, key: str, data: bytes, item: Any) -> Any:
        local = self._local
        if not hasattr(local, "jobs"):
            local.jobs, local.cache = OrderedDict(), WorkerCache()
        if key in local.jobs:
            local.jobs.move_to_end(key)
        else:
            local.jobs[key] = pickle.loads(data)
            while len(local.jobs) > local.cache.capacity:  # bounded as the setups are: a long-lived pool sees
                local.jobs.popitem(last=False)  # many jobs (a trainer's every round), each holding its env
        job = local.jobs[key]
        return job.run(local.cache.state(key, job), item)

    def _unordered(self, job: Job, items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Results as items finish, read off a queue the finished futures put themselves on: O(1) a result.
        (``concurrent.futures.wait`` over the pending futures would cost O(pending) a result, i.e. quadratic in
        the items of a large evaluation: at a few thousand episodes it outweighed the episodes' own work.)"""
        key, data = job_bytes(job)
        threads = self._threads or self._start(threads_for(job))
        finished: SimpleQueue[Future] = SimpleQueue()
        pending: dict[Future, int] = {}
        for position, item in enumerate(items):
            future = threads.submit(self._run, key, data, item)
            pending[future] = position
            future.add_done_callback(finished.put)
        try:
            while pending:
                future = finished.get()
                position = pending.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # noqa: BLE001 - reported with the item and its traceback
                    raise PoolError(
                        f"item {position} failed in a rollout thread:\n" + "".join(traceback.format_exception(exc))
                    ) from exc
                yield position, result
        finally:  # stopped early (an error, the caller broke off): items not started yet never start
            for future in pending:
                future.cancel()

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
