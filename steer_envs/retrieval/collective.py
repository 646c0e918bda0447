"""``batched:<spec>``: the searches that several envs make in the same step reach the retriever as one batch.

Why: a vector of envs (or the N forks of a counterfactual measurement) stepped together issues up to one search
per env per step. Stepping them in threads under one :class:`CollectiveBatcher`, each search waits until every
env of the step has either searched or finished its step, then all waiting queries go out in one
``batch_search`` (the same hits as single searches: BM25 ranks each query on its own). Lucene's batch search runs
its queries on several threads, bm25s tokenises a batch in one call; BENCHMARKS.md measures what each gains.

Use: ``gym.make(..., retriever="batched:bm25s")`` for every env, then :func:`step_together` (or your own threads
inside ``batcher.party()``). Outside a party the wrapper passes searches straight through, so an env built this
way behaves exactly like one on the inner retriever when it is stepped alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from .base import Hit, Retriever

#: a party that has not searched nor left within this many seconds no longer holds the others back
STRAGGLER_TIMEOUT_S = 0.5


@dataclass
class _Request:
    queries: list[str]
    k: int
    result: list[list[Hit]] | None = None
    error: BaseException | None = None


class CollectiveBatcher:
    """A :class:`Retriever` that batches the concurrent searches of the threads inside :meth:`party`."""

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner
        self.name = f"batched:{getattr(inner, 'name', type(inner).__name__)}"
        self._cond = threading.Condition()
        self._parties = 0
        self._waiting: list[_Request] = []
        self._local = threading.local()
        self.calls = 0  # inner batch_search calls
        self.queries = 0  # queries sent through them

    def expect(self, parties: int) -> None:
        """Register ``parties`` threads before they start (so the first to search waits for the others); each then
        enters with ``party(registered=True)``."""
        with self._cond:
            self._parties += parties

    @contextmanager
    def party(self, registered: bool = False):
        """The calling thread takes part in collective batching until the block ends."""
        if not registered:
            self.expect(1)
        self._local.active = True
        try:
            yield self
        finally:
            self._local.active = False
            with self._cond:
                self._parties -= 1
                self._flush_if_complete()

    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        if not getattr(self._local, "active", False):
            return self.inner.batch_search(queries, k)
        request = _Request(list(queries), k)
        with self._cond:
            self._waiting.append(request)
            self._flush_if_complete()
            while request.result is None and request.error is None:
                if not self._cond.wait(STRAGGLER_TIMEOUT_S) and request.result is None and request.error is None:
                    self._flush()  # a party is busy elsewhere: do not wait for it
        if request.error is not None:
            raise request.error
        return request.result  # type: ignore[return-value]

    def _flush_if_complete(self) -> None:
        if self._waiting and len(self._waiting) >= self._parties:
            self._flush()

    def _flush(self) -> None:
        """Answer every waiting request (called with the condition held; the other parties are all waiting)."""
        batch, self._waiting = self._waiting, []
        for k in sorted({r.k for r in batch}):
            group = [r for r in batch if r.k == k]
            flat = [q for r in group for q in r.queries]
            try:
                hits = self.inner.batch_search(flat, k)
            except BaseException as exc:  # noqa: BLE001 - each waiting search raises it
                for r in group:
                    r.error = exc
                continue
            self.calls += 1
            self.queries += len(flat)
            start = 0
            for r in group:
                r.result = hits[start : start + len(r.queries)]
                start += len(r.queries)
        self._cond.notify_all()


_POOLS: dict[int, ThreadPoolExecutor] = {}


def run_together(batcher: CollectiveBatcher, calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` concurrently, each as a party of ``batcher``; their results in order (exceptions re-raised)."""

    def in_party(call: Callable[[], Any]) -> Any:
        with batcher.party(registered=True):
            return call()

    batcher.expect(len(calls))
    pool = _POOLS.setdefault(
        len(calls), ThreadPoolExecutor(max_workers=max(1, len(calls)), thread_name_prefix="steer-envs-step")
    )
    return [f.result() for f in [pool.submit(in_party, c) for c in calls]]


def step_together(envs: Sequence[Any], actions: Sequence[Any], batcher: CollectiveBatcher) -> list[tuple]:
    """``env.step(action)`` for every env at once, their searches batched: the ``(obs, reward, terminated,
    truncated, info)`` of each, in order (the same as stepping them one after the other)."""
    return run_together(batcher, [partial(e.step, a) for e, a in zip(envs, actions)])


def make_batched_retriever(arg: str, ctx) -> CollectiveBatcher:
    """Factory of the ``batched`` kind: ``batched:<inner spec>`` (default ``bm25s``)."""
    from .registry import make_retriever

    return CollectiveBatcher(make_retriever(arg or "bm25s", ctx.corpus_path, ctx.data_dir))
