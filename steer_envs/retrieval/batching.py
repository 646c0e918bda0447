"""Dynamic batching: the queries of requests that arrive together reach the retriever as one ``batch_search``.

Why: a retrieval server under many clients (vectorised envs, parallel rollouts, an RL trainer's actors) receives
requests at nearly the same time; answering each with its own search call repeats the per-call work (tokeniser,
locks, a thread hand-off) and makes requests wait on each other's calls. The batcher collects whatever arrives
within ``window_s`` of an idle moment (and everything that arrives while a search is running), groups it by
``k``, and answers each group with one call in a single search thread, so the event loop keeps reading requests.
Results are those of single searches: each query's hits do not depend on the other queries of its batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .base import Hit, Retriever


@dataclass
class BatchStats:
    calls: int = 0  # batch_search calls made
    queries: int = 0  # queries answered
    requests: int = 0  # requests answered
    largest: int = 0  # most queries in one call
    sizes: list[int] = field(default_factory=list, repr=False)

    @property
    def mean_batch(self) -> float:
        return self.queries / self.calls if self.calls else 0.0


class DynamicBatcher:
    """``await batcher.search(queries, k)`` from any number of concurrent request handlers (one event loop)."""

    def __init__(self, retriever: Retriever, window_s: float = 0.002, max_queries: int = 1024) -> None:
        self.retriever = retriever
        self.window_s = max(0.0, window_s)
        self.max_queries = max(1, max_queries)
        self.stats = BatchStats()
        self._pending: list[tuple[list[str], int, asyncio.Future]] = []
        self._runner: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="steer-envs-search")

    async def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        self._pending.append((list(queries), k, future))
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        if self.window_s:
            await asyncio.sleep(self.window_s)  # collect the requests arriving together
        while self._pending:
            batch: list[tuple[list[str], int, asyncio.Future]] = []
            taken = 0
            while self._pending and (not batch or taken + len(self._pending[0][0]) <= self.max_queries):
                entry = self._pending.pop(0)
                batch.append(entry)
                taken += len(entry[0])
            for k in sorted({k for _, k, _ in batch}):
                group = [(queries, future) for queries, kk, future in batch if kk == k]
                flat = [q for queries, _ in group for q in queries]
                try:
                    hits = await loop.run_in_executor(self._executor, self.retriever.batch_search, flat, k)
                except Exception as exc:  # noqa: BLE001 - every waiting request gets the failure
                    for _, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self.stats.calls += 1
                self.stats.queries += len(flat)
                self.stats.requests += len(group)
                self.stats.largest = max(self.stats.largest, len(flat))
                start = 0
                for queries, future in group:
                    if not future.done():
                        future.set_result(hits[start : start + len(queries)])
                    start += len(queries)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
