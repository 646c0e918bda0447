"""Typed records for the data the environments stand on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SubQuestion:
    """One hop of a MuSiQue decomposition; ``#1`` in ``question`` refers to hop 1's answer."""

    question: str
    answer: str
    supporting_id: str | None = None


@dataclass(frozen=True)
class Task:
    """A QA task: the goal ``g`` handed to an executor, plus what is needed to score it.

    Only ``question`` is shown to agents; everything else is ground truth or metadata.
    """

    id: str
    question: str
    golden_answers: tuple[str, ...]
    benchmark: str = "custom"
    split: str = "test"
    passage_ids: tuple[str, ...] = ()
    supporting_ids: tuple[str, ...] = ()
    answer_bearing_ids: tuple[str, ...] = ()
    answerable_in_corpus: bool = True
    decomposition: tuple[SubQuestion, ...] = ()
    evidences: tuple[tuple[str, str, str], ...] = ()
    hops: int | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Passage:
    """A corpus passage. ``contents`` follows the Search-R1 / pyserini convention ``"Title"\\ntext``."""

    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        return f'"{self.title}"\n{self.text}'

    @staticmethod
    def from_contents(pid: str, contents: str) -> Passage:
        """Split a Search-R1 ``contents`` string into title and text."""
        head, _, body = contents.partition("\n")
        title = head.strip().strip('"')
        if not body:  # no title line: the whole string is text
            return Passage(pid, "", contents.strip())
        return Passage(pid, title, body.strip())
