"""A per-process LRU cache of search results, keyed by (retriever, query, k), with timing counters.

Every search the suite makes on behalf of an episode goes through :func:`cached_search`: the simulated searcher,
the hand-off pipeline's roles and GuidedSearch-v0. Simulated episodes re-issue the same queries often (same
questions, repeated searches), so caching makes them several times faster. Benchmarks switch it off
(``set_enabled(False)``) to measure the real cost of search, and read :data:`STATS` for the share of time spent
inside the retriever.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from .base import Hit, Retriever

MAX_ENTRIES = 50_000


@dataclass
class RetrievalStats:
    calls: int = 0
    misses: int = 0
    seconds: float = 0.0

    def reset(self) -> None:
        self.calls = self.misses = 0
        self.seconds = 0.0


STATS = RetrievalStats()
_CACHE: OrderedDict[tuple[str, str, int], tuple[Hit, ...]] = OrderedDict()
_ENABLED = [True]
#: envs in several threads share the cache (the concurrent vector env): an OrderedDict's move_to_end / popitem are
#: not safe against each other; the search itself runs outside the lock
_LOCK = threading.Lock()


def set_enabled(enabled: bool) -> None:
    _ENABLED[0] = bool(enabled)
    if not enabled:
        _CACHE.clear()


def search_key(spec: str, data_dir: str | None) -> str:
    """The cache key of the retriever ``make_retriever(spec, data_dir=data_dir)`` builds: one spec over two data
    folders is two indexes, whose results must not be shared."""
    return spec if data_dir is None else f"{spec}@{data_dir}"


def cached_search(retriever: Retriever, key: str, query: str, k: int) -> tuple[Hit, ...]:
    cache_key = (key, query, k)
    with _LOCK:
        STATS.calls += 1
        if _ENABLED[0]:
            hit = _CACHE.get(cache_key)
            if hit is not None:
                _CACHE.move_to_end(cache_key)
                return hit
        STATS.misses += 1
    start = time.perf_counter()
    result = tuple(retriever.search(query, k))
    with _LOCK:
        STATS.seconds += time.perf_counter() - start
        if _ENABLED[0]:
            _CACHE[cache_key] = result
            if len(_CACHE) > MAX_ENTRIES:
                _CACHE.popitem(last=False)
    return result


__all__ = ["MAX_ENTRIES", "STATS", "RetrievalStats", "cached_search", "set_enabled"]
