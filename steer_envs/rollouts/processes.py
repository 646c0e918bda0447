"""The ``processes`` pool: standard-library worker processes on this machine, replaced when one dies.

Each worker is a ``spawn``-started process with one pipe. The parent hands one item at a time to each idle worker
and waits on the pipes and the process sentinels together (``multiprocessing.connection.wait``), so a worker
that dies mid-item (killed, out of memory) is noticed at once: it is replaced by a fresh process and its item
is given again (up to ``max_item_retries`` times). An exception inside an item is not retried (it would fail
the same way): it stops the call with the worker's traceback.
"""

from __future__ import annotations

import multiprocessing
import pickle
import traceback
from collections import deque
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from ..meter import add_env_steps, env_steps
from .base import (
    Job,
    PoolConfig,
    PoolError,
    RolloutPool,
    WorkerCache,
    job_bytes,
    limit_threads_in_worker,
    maybe_kill_for_test,
)


def _worker_main(conn: Connection) -> None:
    """A worker's loop: ``(key, job bytes or None, position, item)`` in, ``(position, ok, result, env steps)``
    out (the item's env steps go to the parent's meter, :mod:`steer_envs.meter`)."""
    limit_threads_in_worker()
    cache = WorkerCache()
    jobs: dict[str, Job] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        key, data, position, item = message
        try:
            if data is not None:
                jobs[key] = pickle.loads(data)
            maybe_kill_for_test()
            before = env_steps()
            result = jobs[key].run(cache.state(key, jobs[key]), item)
            conn.send((position, True, result, env_steps() - before))
        except BaseException:  # noqa: BLE001 - every failure goes back to the parent with its traceback
            conn.send((position, False, traceback.format_exc(), 0))


class _Worker:
    def __init__(self, context) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child,), daemon=True, name="steer-envs-worker")
        self.process.start()
        child.close()
        self.known: set[str] = set()
        self.busy: tuple[int, Any] | None = None

    def send(self, key: str, data: bytes, position: int, item: Any) -> None:
        self.conn.send((key, None if key in self.known else data, position, item))
        self.known.add(key)
        self.busy = (position, item)

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
            self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)
        self.conn.close()


class ProcessPool(RolloutPool):
    kind = "processes"

    def __init__(self, config: PoolConfig) -> None:
        super().__init__(config)
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self.replaced = 0  # workers replaced after dying (for tests and logs)

    @property
    def workers(self) -> int:
        if self.config.workers == 0:
            return max(1, multiprocessing.cpu_count())
        return self.config.workers

    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._workers]

    def _ensure_workers(self) -> None:
        while len(self._workers) < self.workers:
            self._workers.append(_Worker(self._context))

    def _replace(self, dead: _Worker) -> _Worker:
        dead.stop()
        fresh = _Worker(self._context)
        self._workers[self._workers.index(dead)] = fresh
        self.replaced += 1
        return fresh

    def _unordered(self, job: Job, items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        if not items:
            return
        key, data = job_bytes(job)
        self._ensure_workers()
        todo: deque[tuple[int, Any]] = deque(enumerate(items))
        deaths: dict[int, int] = {}
        try:
            while todo or any(w.busy for w in self._workers):
                for worker in self._workers:
                    if worker.busy is None and todo:
                        position, item = todo.popleft()
                        worker.send(key, data, position, item)
                busy = [w for w in self._workers if w.busy is not None]
                ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
                for worker in busy:
                    if worker.conn not in ready and worker.process.sentinel not in ready:
                        continue
                    message = None
                    if worker.conn in ready:
                        try:
                            message = worker.conn.recv()
                        except (EOFError, OSError):
                            message = None
                    if message is None:  # the worker died with the item
                        position, item = worker.busy  # type: ignore[misc]
                        deaths[position] = deaths.get(position, 0) + 1
                        if deaths[position] > self.config.max_item_retries:
                            worker.process.join(2)
                            raise PoolError(
                                f"item {position} lost its worker process {deaths[position]} times (exit code "
                                f"{worker.process.exitcode}); giving up. If the workers die at start, the script that "
                                'creates the pool needs an `if __name__ == "__main__":` guard (worker processes are '
                                "spawned and import it)"
                            )
                        self._replace(worker)
                        todo.appendleft((position, item))
                        continue
                    position, ok, result, steps = message
                    worker.busy = None
                    if not ok:
                        raise PoolError(f"item {position} failed in a worker process:\n{result}")
                    add_env_steps(steps)
                    yield position, result
        except BaseException:
            # an interrupted call leaves workers mid-item: stop them all, the next call starts fresh ones
            self.close()
            raise

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers = []
