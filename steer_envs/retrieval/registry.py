"""Retriever construction from a spec string.

Spec grammar: ``<kind>`` or ``<kind>:<argument>``, e.g. ``bm25s``, ``lucene``, ``http:http://127.0.0.1:8000``.
Backends register a factory here; factories import their heavy dependencies lazily, so ``import steer_envs``
stays fast and optional extras stay optional.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..data.corpus import Corpus, load_corpus
from ..errors import unknown_name
from ..registry import LazyRegistry
from .base import Retriever

RetrieverFactory = Callable[[str, "RetrieverContext"], Retriever]


@dataclass
class RetrieverContext:
    """What a factory may need: the corpus (loaded on first use) and the data folder."""

    corpus_path: str | os.PathLike | None = None
    data_dir: str | os.PathLike | None = None

    def corpus(self) -> Corpus:
        return load_corpus(self.corpus_path, data_dir=self.data_dir)


#: installed packages add retriever kinds through this entry-point group (name = kind, object = factory)
ENTRY_POINT_GROUP = "steer_envs.retrievers"
RETRIEVERS: LazyRegistry[RetrieverFactory] = LazyRegistry(
    "retriever", "bm25s, lucene, http:<url>", entry_point_group=ENTRY_POINT_GROUP
)
_INSTANCES: dict[tuple, Retriever] = {}
#: envs built or stepping in several threads must share one index, not each load their own (re-entrant: a
#: ``batched:`` retriever builds its inner one through make_retriever)
_LOCK = threading.RLock()


def register_retriever(kind: str, factory: RetrieverFactory | str) -> None:
    """Register a kind. ``factory`` may be ``"module:function"``, imported on first use (optional extras)."""
    RETRIEVERS.register(kind, factory)


def make_retriever(
    spec: str = "bm25s",
    corpus_path: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    shared: bool = True,
) -> Retriever:
    """Build (or, with ``shared=True``, reuse within this process) the retriever a spec names."""
    kind, _, arg = spec.partition(":")
    if kind not in RETRIEVERS:
        raise unknown_name("retriever kind", kind, list(RETRIEVERS), hint="a spec looks like 'bm25s' or 'http:URL'")
    key = (spec, str(corpus_path), str(data_dir))
    with _LOCK:
        if shared and key in _INSTANCES:
            return _INSTANCES[key]
        retriever = RETRIEVERS.resolve(kind)(arg, RetrieverContext(corpus_path, data_dir))
        if shared:
            _INSTANCES[key] = retriever
        return retriever


def _bm25s(arg: str, ctx: RetrieverContext) -> Retriever:
    from .bm25 import BM25sRetriever

    return BM25sRetriever(ctx.corpus())


register_retriever("bm25s", _bm25s)
register_retriever("bm25", _bm25s)
register_retriever("lucene", "steer_envs.retrieval.lucene:make_lucene_retriever")
register_retriever("http", "steer_envs.retrieval.http_client:make_http_retriever")
register_retriever("batched", "steer_envs.retrieval.collective:make_batched_retriever")
