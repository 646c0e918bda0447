"""The reference plans of a task set: every plan the shared data yields, by task, and its coverage.

Built once per process from the trajectory files and the tasks' gold structure (a few seconds), then looked up by
task id. A task may have several references (one per recorded agent that solved it, plus its gold structure);
:meth:`ReferencePlans.reference` picks one by source preference, so experiments say which kind of plan they use.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..data.corpus import load_corpus
from ..data.records import Task
from ..data.tasks import load_tasks
from ..data.trajectories import load_rollouts, trajectory_files
from ..errors import unknown_name
from .noise import distractor_titles, inject_noise
from .records import ReferencePlan
from .sources import from_gold, from_rollouts

SOURCE_KINDS: tuple[str, ...] = ("rollout", "gold")


def source_kind(source: str) -> str:
    """``rollout:search_r1_base`` -> ``rollout``; ``gold:evidence`` -> ``gold``."""
    return source.split(":", 1)[0]


@dataclass
class ReferencePlans:
    """Reference plans by task id, plus what noise injection needs (titles of distractor passages)."""

    by_task: dict[str, list[ReferencePlan]]
    tasks: dict[str, Task]
    title_of: dict[str, str]

    def reference(
        self, task_id: str, prefer: Sequence[str] = SOURCE_KINDS, noise: float = 0.0, noise_seed: int = 0
    ) -> ReferencePlan | None:
        """The first reference of the most preferred source kind (``rollout`` / ``gold``), optionally noisy."""
        for kind in prefer:
            if kind not in SOURCE_KINDS:
                raise unknown_name("reference-plan source kind", kind, SOURCE_KINDS)
        candidates = self.by_task.get(task_id, [])
        for kind in prefer:
            for seq in candidates:
                if source_kind(seq.source) == kind:
                    return self._noisy(seq, noise, noise_seed)
        return None

    def _noisy(self, seq: ReferencePlan, noise: float, seed: int) -> ReferencePlan:
        if noise <= 0:
            return seq
        task = self.tasks[seq.task_id]
        titles = distractor_titles(task, self.title_of.get)  # type: ignore[arg-type]
        return inject_noise(
            seq, noise, seed, titles, fallback=_fallback_titles(task, self.tasks.values(), self.title_of)
        )

    def coverage(self, benchmarks: Iterable[str] | None = None) -> list[dict]:
        """One row per benchmark: tasks, tasks with a rollout / gold / any reference, mean reference length."""
        rows = []
        per_bench: dict[str, list[Task]] = defaultdict(list)
        for task in self.tasks.values():
            per_bench[task.benchmark].append(task)
        names = list(benchmarks) if benchmarks is not None else sorted(per_bench)
        for bench in names:
            tasks = per_bench.get(bench, [])
            kinds: Counter = Counter()
            sources: Counter = Counter()
            lengths = []
            for task in tasks:
                refs = self.by_task.get(task.id, [])
                present = {source_kind(r.source) for r in refs}
                kinds.update(present)
                kinds["any"] += bool(refs)
                sources.update(r.source for r in refs)
                ref = self.reference(task.id)
                if ref is not None:
                    lengths.append(len(ref))
            rows.append(
                {
                    "benchmark": bench,
                    "tasks": len(tasks),
                    "rollout": kinds["rollout"],
                    "gold": kinds["gold"],
                    "any": kinds["any"],
                    "mean_length": sum(lengths) / len(lengths) if lengths else 0.0,
                    "sources": dict(sorted(sources.items())),
                }
            )
        return rows


def _fallback_titles(task: Task, tasks: Iterable[Task], title_of: dict[str, str]) -> list[str]:
    """Titles of other tasks' passages of the same benchmark (tasks shipped without distractors, e.g. TriviaQA)."""
    out: list[str] = []
    for other in tasks:
        if other.benchmark == task.benchmark and other.id != task.id:
            out.extend(title_of.get(pid, "") for pid in other.passage_ids[:1])
        if len(out) >= 50:
            break
    return [t for t in out if t]


_CACHE: dict[tuple, ReferencePlans] = {}


def load_reference_plans(
    benchmarks: Sequence[str] | None = None,
    split: str | Sequence[str] | None = None,
    data_dir: str | os.PathLike | None = None,
    sources: Sequence[str] = SOURCE_KINDS,
) -> ReferencePlans:
    """Reference plans for the tasks of ``benchmarks`` / ``split`` (memoised per process)."""
    for kind in sources:
        if kind not in SOURCE_KINDS:
            raise unknown_name("reference-plan source kind", kind, SOURCE_KINDS)
    key = (
        tuple(benchmarks) if benchmarks else None,
        split if isinstance(split, str) or split is None else tuple(split),
        str(data_dir),
        tuple(sources),
    )
    if key in _CACHE:
        return _CACHE[key]
    tasks = load_tasks(benchmarks, split, data_dir)
    corpus = load_corpus(data_dir=data_dir)
    title_of = {p.id: p.title for p in corpus.passages}
    by_task: dict[str, list[ReferencePlan]] = defaultdict(list)
    if "rollout" in sources:
        for name in trajectory_files(data_dir):
            for seq in from_rollouts(load_rollouts(name, data_dir), tasks):
                by_task[seq.task_id].append(seq)
    if "gold" in sources:
        for task in tasks:
            gold = from_gold(task, lambda pid: title_of.get(pid, ""))
            if gold is not None:
                by_task[task.id].append(gold)
    data = ReferencePlans(dict(by_task), {t.id: t for t in tasks}, title_of)
    _CACHE[key] = data
    return data
