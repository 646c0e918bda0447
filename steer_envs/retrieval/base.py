"""The retriever protocol every search backend implements.

Executors, the retrieval server and the benchmarks see only this protocol, so backends (bm25s, Lucene, dense,
a remote HTTP server) are interchangeable by a spec string.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import SteerEnvsError

MAX_K = 100


@dataclass(frozen=True)
class Hit:
    """One ranked passage."""

    id: str
    title: str
    text: str
    score: float

    @property
    def contents(self) -> str:
        return f'"{self.title}"\n{self.text}'


@runtime_checkable
class Retriever(Protocol):
    """``search`` one query or ``batch_search`` many; both return hits best-first."""

    name: str

    def search(self, query: str, k: int = 5) -> list[Hit]: ...

    def batch_search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]: ...


def check_query(query: object, k: int) -> str:
    """Validate a query and ``k`` with errors that say how to fix them."""
    if not isinstance(query, str):
        raise SteerEnvsError(f"a search query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise SteerEnvsError(
            "the search query is empty; give some words to search for, e.g. 'first nobel prize physics'"
        )
    if not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SteerEnvsError(f"k must be an integer between 1 and {MAX_K}, got {k!r}")
    return query
