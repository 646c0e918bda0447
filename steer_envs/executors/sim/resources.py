"""The read-only resources of a simulated system (the single searcher, the hand-off pipeline): the retriever, the
corpus and the bank of recorded thoughts. Loaded on first use, shared with forks, dropped when pickled (a worker
reloads them from its own cache instead of receiving an index over the wire)."""

from __future__ import annotations

from typing import Any

from ...data.corpus import Corpus, load_corpus
from ...retrieval.base import Retriever
from ...retrieval.registry import make_retriever
from .thoughts import ThoughtBank, load_thought_bank


class SimResources:
    """Mixin; the class sets ``self.context`` (an ExecutorContext) and ``self.profile`` (with ``thought_sources``)."""

    context: Any
    profile: Any

    def _init_resources(self) -> None:
        self._retriever: Retriever | None = None
        self._corpus: Corpus | None = None
        self._thoughts: ThoughtBank | None | bool = False  # False: not loaded yet; None: no recordings available

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            self._retriever = make_retriever(self.context.retriever, data_dir=self.context.data_dir)
        return self._retriever

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            self._corpus = load_corpus(data_dir=self.context.data_dir)
        return self._corpus

    @property
    def thoughts(self) -> ThoughtBank | None:
        if self._thoughts is False:
            self._thoughts = load_thought_bank(self.profile.thought_sources, self.context.data_dir)
        return self._thoughts  # type: ignore[return-value]

    def close(self) -> None:
        """Drop the references to the resources (the retriever instance is shared per process by
        ``make_retriever``, so it is released, not shut down; they reload on use), then the base's ``close``."""
        self._init_resources()
        parent = getattr(super(), "close", None)
        if parent is not None:
            parent()

    def _share_resources(self, other: SimResources) -> None:
        other._retriever, other._corpus, other._thoughts = self._retriever, self._corpus, self._thoughts

    @staticmethod
    def _without_resources(state: dict) -> dict:
        state.update(_retriever=None, _corpus=None, _thoughts=False)
        return state
