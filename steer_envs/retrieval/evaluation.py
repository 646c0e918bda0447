"""Retrieval quality against the benchmarks' gold supporting passages.

``supporting_recall`` answers the question a user of the search envs cares about: with the question itself as
the query, how often is at least one gold supporting passage among the top ``k``? (Only benchmarks that define
``supporting_ids`` count.)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..data.records import Task
from .base import Retriever


@dataclass(frozen=True)
class RecallReport:
    k: int
    overall: float
    n_tasks: int
    by_benchmark: dict[str, tuple[int, float]] = field(default_factory=dict)

    def to_markdown(self) -> str:
        lines = [f"| benchmark | tasks | recall@{self.k} |", "| --- | ---: | ---: |"]
        lines += [f"| {b} | {n} | {r:.3f} |" for b, (n, r) in self.by_benchmark.items()]
        lines.append(f"| **all** | {self.n_tasks} | **{self.overall:.3f}** |")
        return "\n".join(lines)


def supporting_hits(retriever: Retriever, tasks: Sequence[Task], k: int = 5) -> list[bool]:
    """Per task: is a supporting passage in the top ``k`` (question as query)?"""
    results = retriever.batch_search([t.question for t in tasks], k)
    return [any(h.id in t.supporting_ids for h in hits) for t, hits in zip(tasks, results)]


def supporting_recall(retriever: Retriever, tasks: Sequence[Task], k: int = 5) -> RecallReport:
    scored = [t for t in tasks if t.supporting_ids]
    hits = supporting_hits(retriever, scored, k)
    groups: dict[str, list[bool]] = defaultdict(list)
    for task, hit in zip(scored, hits):
        groups[task.benchmark].append(hit)
    return RecallReport(
        k=k,
        overall=sum(hits) / len(hits) if hits else 0.0,
        n_tasks=len(hits),
        by_benchmark={b: (len(v), sum(v) / len(v)) for b, v in groups.items()},
    )
