"""Calibration of a simulator profile against real recorded rollouts.

For every recorded rollout whose question is a known task, the simulator runs the same question (unsupervised);
both sides are summarised by benchmark with the same functions (queries parsed from the transcript with
:func:`searched_queries`, the answer with :func:`extract_final_answer`, scored with ASearcher F1), so the
comparison does not depend on how either side was produced.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...data.scoring import f1
from ...data.tasks import load_tasks
from ...data.trajectories import load_rollouts, normalize_question
from ..base import ExecutorContext
from ..protocol import extract_final_answer, searched_queries
from ..registry import make_executor


@dataclass(frozen=True)
class Tolerance:
    """The largest gap between simulated and real statistics that counts as calibrated."""

    searches: float = 0.25  # searches per task (absolute)
    repeated: float = 0.05  # share of tasks with a repeated query (absolute)
    no_answer: float = 0.06  # share of tasks without an answer (absolute)
    f1: float = 6.0  # F1 points


TOLERANCE = Tolerance()


@dataclass(frozen=True)
class BehaviourStats:
    n: int
    searches: float
    repeated: float
    no_answer: float
    f1: float  # in points (0-100)


#: Search-R1's invalid-action reply quotes the markers (``<search> and </search>``); it is not an action
_INVALID_REPLY = re.compile(r"My previous action is invalid\..*?Let me try again\.", re.S)


def transcript_stats(rows: Iterable[tuple[str, Sequence[str]]]) -> BehaviourStats:
    """Summarise (transcript, golden answers) pairs."""
    n = searches = repeated = no_answer = 0
    score = 0.0
    for transcript, golden in rows:
        transcript = _INVALID_REPLY.sub(" ", transcript)
        queries = searched_queries(transcript)
        answer = extract_final_answer(transcript)
        n += 1
        searches += len(queries)
        repeated += len({" ".join(q.lower().split()) for q in queries}) < len(queries)
        no_answer += answer is None
        score += f1(answer, golden)
    n = max(n, 1)
    return BehaviourStats(n, searches / n, repeated / n, no_answer / n, 100 * score / n)


@dataclass(frozen=True)
class CalibrationRow:
    benchmark: str
    real: BehaviourStats
    sim: BehaviourStats

    def gaps(self) -> dict[str, float]:
        return {k: abs(getattr(self.sim, k) - getattr(self.real, k)) for k in ("searches", "repeated", "no_answer", "f1")}

    def within(self, tol: Tolerance = TOLERANCE) -> bool:
        return all(v <= getattr(tol, k) + 1e-9 for k, v in self.gaps().items())


def calibrate(
    profile_spec: str = "sim:default",
    source: str = "search_r1_base",
    limit: int | None = 400,
    max_turns: int = 10,
    data_dir: str | None = None,
    seed: int = 0,
) -> list[CalibrationRow]:
    """Run ``profile_spec`` on the questions of ``source`` (at most ``limit`` rollouts per benchmark, evenly spaced)."""
    rollouts = load_rollouts(source, data_dir)
    by_bench: dict[str, list] = defaultdict(list)
    for r in rollouts:
        by_bench[r.benchmark].append(r)
    executor = make_executor(profile_spec, ExecutorContext(data_dir=data_dir, max_turns=max_turns))
    out = []
    for bench in sorted(by_bench):
        tasks = {normalize_question(t.question): t for t in load_tasks(bench, None, data_dir)}
        rows = [r for r in by_bench[bench] if normalize_question(r.question) in tasks]
        if limit is not None and len(rows) > limit:
            step = len(rows) / limit
            rows = [rows[int(i * step)] for i in range(limit)]
        real = transcript_stats((r.response, r.golden_answers) for r in rows)
        sim_rows = []
        for i, r in enumerate(rows):
            task = tasks[normalize_question(r.question)]
            executor.reset(task, seed=seed * 1_000_003 + i)
            while not executor.done:
                executor.step()
            sim_rows.append((executor.transcript, task.golden_answers))
        out.append(CalibrationRow(bench, real, transcript_stats(sim_rows)))
    return out


def format_table(rows: Sequence[CalibrationRow], profile: str, source: str, tol: Tolerance = TOLERANCE) -> str:
    head = ("| benchmark | n | searches/task real / sim | repeated query real / sim | no answer real / sim "
            "| F1 real / sim | within tolerance |\n|---|---|---|---|---|---|---|")
    lines = [f"Calibration of {profile} against {source} (tolerance: searches ±{tol.searches}, repeated ±{tol.repeated:.0%}, "
             f"no answer ±{tol.no_answer:.0%}, F1 ±{tol.f1:g} points)", "", head]
    for row in rows:
        r, s = row.real, row.sim
        lines.append(
            f"| {row.benchmark} | {r.n} | {r.searches:.2f} / {s.searches:.2f} | {r.repeated:.1%} / {s.repeated:.1%} "
            f"| {r.no_answer:.1%} / {s.no_answer:.1%} | {r.f1:.1f} / {s.f1:.1f} | {'yes' if row.within(tol) else 'NO'} |"
        )
    return "\n".join(lines)
