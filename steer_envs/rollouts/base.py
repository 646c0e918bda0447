"""The rollout pool's contract: generic work items, per-worker setup, results keyed by item position.

Why this shape: the expensive loops of the suite (the state bank's rollouts, the G x N counterfactual
continuations of q(s) labelling, filtered BC's paired continuations, evaluation episodes, the probes of a guidance
search) are all "build an env replica once per worker, then run many independent items on it". A :class:`Job`
says exactly that: ``setup()`` builds the worker's state (env replicas, a retriever, a policy) and is run once per
worker and reused for every item of every call with an equal job; ``run(state, item)`` computes one result. Every
item carries what its result depends on (an env snapshot from ``get_state``, actions, seeds), so a result is the
same whichever worker computes it and in whatever order items finish: :meth:`RolloutPool.map` returns results in
item order, identical to the local loop for fixed seeds, for any number of workers.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import signal
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SteerEnvsError

POOL_KINDS = ("auto", "greenlets", "local", "processes", "ray", "threads")
#: fault injection for the replacement tests: ``"N:MARKER"`` makes the first worker process that runs its N-th
#: item while MARKER does not exist yet create MARKER and SIGKILL itself (a real hard kill at a reproducible
#: point, the same idea as the harness's STEER_ENVS_KILL_AFTER_EPISODES)
KILL_ONCE_ENV = "STEER_ENVS_POOL_KILL_ONCE"


@dataclass(frozen=True)
class Job:
    """What workers run. Both callables must be picklable (module-level functions, dataclass instances) for the
    ``processes`` and ``ray`` pools; ``local`` calls them in place."""

    setup: Callable[[], Any]
    run: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class PoolConfig:
    """``kind``: local (in this process), processes (standard-library worker processes on this machine), ray
    (actors on a Ray cluster: a local one started for the run, or ``ray_address``), greenlets (many items in
    flight on this thread, for executors whose waits on a model server yield), threads (threads of this process,
    for executors that wait on a server and block while they do) or auto (the command line's default: greenlets
    or threads where the executor is I/O-bound, ``openai:``, else local; see
    :func:`~steer_envs.rollouts.concurrent_pool`). ``workers``: worker count (for ray without a count: one per
    CPU of the cluster; for greenlets and threads without one: the executor's in-flight bound,
    :func:`~steer_envs.rollouts.in_flight_of`)."""

    kind: str = "local"
    workers: int = 1
    ray_address: str | None = None
    ray_temp_dir: str | None = None
    #: how often an item may lose its worker (killed, out of memory) before the run stops with an error
    max_item_retries: int = 3
    #: CPUs a Ray actor reserves: 1 for the simulator (CPU-bound); a fraction (e.g. 0.25) for an LLM executor,
    #: whose workers mostly wait on the model server, so that many rollouts keep its batches full
    cpus_per_worker: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in POOL_KINDS:
            raise SteerEnvsError(f"unknown pool kind {self.kind!r}; valid kinds: {', '.join(POOL_KINDS)}")
        if not isinstance(self.workers, int) or self.workers < 0:
            raise SteerEnvsError(f"pool workers must be a non-negative integer (0 = one per CPU), got {self.workers!r}")
        if self.kind in ("local", "auto") and self.workers > 1:
            raise SteerEnvsError(
                f"the local pool runs in this process (1 worker), got workers={self.workers}; "
                "use --pool processes or --ray for more"
            )
        if not self.cpus_per_worker > 0:
            raise SteerEnvsError(f"cpus_per_worker must be > 0, got {self.cpus_per_worker!r}")
        if self.ray_address and self.kind != "ray":
            raise SteerEnvsError("ray_address is only used by the ray pool (pass --ray-address alone, or --pool ray)")

    def describe(self) -> str:
        where = f" at {self.ray_address}" if self.ray_address else ""
        return f"{self.kind} pool, {self.workers or 'all CPUs as'} worker(s){where}"


class PoolError(SteerEnvsError):
    """An item failed inside a worker (its traceback is in the message), or kept killing its workers."""


class WorkerCache:
    """The setups a worker has built, by job key (a few at most: env replicas are large)."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._states: OrderedDict[Any, Any] = OrderedDict()

    def state(self, key: Any, job: Job) -> Any:
        if key in self._states:
            self._states.move_to_end(key)
            return self._states[key]
        state = job.setup()
        self._states[key] = state
        while len(self._states) > self.capacity:
            # dropped, not closed: in the local pool the state may be the caller's own env
            self._states.popitem(last=False)
        return state


def job_bytes(job: Job) -> tuple[str, bytes]:
    """The job pickled once for shipping, and its key (equal jobs share worker state across calls)."""
    try:
        data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - report what cannot travel and how to fix it
        raise SteerEnvsError(
            f"this job cannot be sent to worker processes ({type(exc).__name__}: {exc}); its setup and run must be "
            "module-level functions or dataclass instances, or use the local pool"
        ) from None
    return hashlib.sha256(data).hexdigest()[:20], data


_items_in_this_process = [0]


def maybe_kill_for_test() -> None:
    """Honour :data:`KILL_ONCE_ENV` in a worker process (never in the driver: the local pool does not call it)."""
    spec = os.environ.get(KILL_ONCE_ENV)
    if not spec:
        return
    _items_in_this_process[0] += 1
    count, _, marker = spec.partition(":")
    if _items_in_this_process[0] < int(count):
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def limit_threads_in_worker() -> None:
    """One compute thread per worker: N workers on N cores must not each start N BLAS/torch threads."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")


class RolloutPool:
    """Base class: backends implement :meth:`_unordered` (yield ``(position, result)`` as items finish)."""

    kind = "base"

    def __init__(self, config: PoolConfig) -> None:
        self.config = config

    @property
    def workers(self) -> int:
        return max(1, self.config.workers)

    def _unordered(self, job: Job, items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError

    def imap_unordered(self, job: Job, items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """``(position, result)`` as items finish (for progress bars, or writing results as they come)."""
        return self._unordered(job, list(items))

    def imap(self, job: Job, items: Iterable[Any]) -> Iterator[Any]:
        """Results in item order, each as soon as it and every earlier item are done."""
        waiting: dict[int, Any] = {}
        following = 0
        for position, result in self._unordered(job, list(items)):
            waiting[position] = result
            while following in waiting:
                yield waiting.pop(following)
                following += 1

    def map(self, job: Job, items: Iterable[Any], progress: Callable[[int], Any] | None = None) -> list[Any]:
        """All results, in item order; ``progress(1)`` after each finished item."""
        items = list(items)
        results: list[Any] = [None] * len(items)
        for position, result in self._unordered(job, items):
            results[position] = result
            if progress is not None:
                progress(1)
        return results

    def close(self) -> None:
        """Stop the workers (the local pool has none)."""

    def __enter__(self) -> RolloutPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
