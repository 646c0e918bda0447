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
from dataclasses import dataclass, field

import numpy as np

from ...data.scoring import f1
from ...data.tasks import load_tasks
from ...data.trajectories import load_rollouts, normalize_question
from ..base import ExecutorContext
from ..protocol import extract_final_answer, searched_queries
from ..registry import make_executor


@dataclass(frozen=True)
class Tolerance:
    """The largest gap between simulated and real statistics that counts as calibrated.

    A gap passes if it is within the fixed amount *or* within ``z`` standard errors of the difference of the two
    means: a benchmark with a few dozen recordings cannot pin a statistic down to a few points, and a fixed bound
    alone would fail (or pass) it by chance."""

    searches: float = 0.25  # searches per task (absolute)
    repeated: float = 0.05  # share of tasks with a repeated query (absolute)
    no_answer: float = 0.06  # share of tasks without an answer (absolute)
    f1: float = 6.0  # F1 points
    z: float = 2.0

    def describe(self) -> str:
        return (
            f"searches ±{self.searches}, repeated ±{self.repeated:.0%}, no answer ±{self.no_answer:.0%}, "
            f"F1 ±{self.f1:g} points, or within {self.z:g} standard errors of the difference, whichever is wider"
        )


TOLERANCE = Tolerance()
STATISTICS: tuple[str, ...] = ("searches", "repeated", "no_answer", "f1")


@dataclass(frozen=True)
class BehaviourStats:
    """Per-benchmark means of the per-task statistics (and their standard errors)."""

    n: int
    searches: float
    repeated: float
    no_answer: float
    f1: float  # in points (0-100)
    se: dict[str, float] = field(default_factory=dict, compare=False)


#: Search-R1's invalid-action reply quotes the markers (``<search> and </search>``); it is not an action
_INVALID_REPLY = re.compile(r"My previous action is invalid\..*?Let me try again\.", re.S)


def transcript_stats(rows: Iterable[tuple[str, Sequence[str]]]) -> BehaviourStats:
    """Summarise (transcript, golden answers) pairs."""
    values: dict[str, list[float]] = {k: [] for k in STATISTICS}
    for transcript, golden in rows:
        transcript = _INVALID_REPLY.sub(" ", transcript)
        queries = searched_queries(transcript)
        answer = extract_final_answer(transcript)
        values["searches"].append(len(queries))
        values["repeated"].append(float(len({" ".join(q.lower().split()) for q in queries}) < len(queries)))
        values["no_answer"].append(float(answer is None))
        values["f1"].append(100 * f1(answer, golden))
    n = len(values["f1"])
    means = {k: float(np.mean(v)) if v else 0.0 for k, v in values.items()}
    se = {k: float(np.std(v, ddof=1) / np.sqrt(n)) if n > 1 else 0.0 for k, v in values.items()}
    return BehaviourStats(n, **means, se=se)


@dataclass(frozen=True)
class CalibrationRow:
    benchmark: str
    real: BehaviourStats
    sim: BehaviourStats
    source: str = ""

    def gaps(self) -> dict[str, float]:
        return {k: abs(getattr(self.sim, k) - getattr(self.real, k)) for k in STATISTICS}

    def allowed(self, tol: Tolerance = TOLERANCE) -> dict[str, float]:
        """The gap each statistic may have: the fixed bound or ``z`` standard errors of the difference."""
        return {
            k: max(getattr(tol, k), tol.z * float(np.hypot(self.real.se.get(k, 0.0), self.sim.se.get(k, 0.0))))
            for k in STATISTICS
        }

    def within(self, tol: Tolerance = TOLERANCE) -> bool:
        allowed = self.allowed(tol)
        return all(v <= allowed[k] + 1e-9 for k, v in self.gaps().items())

    def worst_ratio(self, tol: Tolerance = TOLERANCE) -> float:
        """max over statistics of gap / allowed gap (< 1: calibrated); what a fit minimises."""
        allowed = self.allowed(tol)
        return max(v / allowed[k] for k, v in self.gaps().items())


#: the recordings each shipped profile is calibrated against (``steer-envs calibrate`` with no --source)
PROFILE_SOURCES: dict[str, tuple[str, ...]] = {
    "default": ("search_r1_base",),
    "r1searcher": ("r1_searcher_qwen",),
    "r1searcher_llama": ("r1_searcher_llama",),
}


def calibrate(
    profile_spec: str = "sim:default",
    source: str = "search_r1_base",
    limit: int | None = 400,
    max_turns: int = 10,
    data_dir: str | None = None,
    seed: int = 0,
    splits: Sequence[str] | None = None,
) -> list[CalibrationRow]:
    """Run ``profile_spec`` on the questions of ``source`` (at most ``limit`` rollouts per benchmark, evenly spaced).

    ``splits`` keeps only recordings of tasks in those splits: profiles are fitted on train + dev recordings, and
    the table reports every split and the test split alone, so a fit is checked on questions it never saw."""
    rollouts = load_rollouts(source, data_dir)
    by_bench: dict[str, list] = defaultdict(list)
    for r in rollouts:
        by_bench[r.benchmark].append(r)
    executor = make_executor(profile_spec, ExecutorContext(data_dir=data_dir, max_turns=max_turns))
    out = []
    for bench in sorted(by_bench):
        tasks = {normalize_question(t.question): t for t in load_tasks(bench, splits, data_dir)}
        rows = [r for r in by_bench[bench] if normalize_question(r.question) in tasks]
        if limit is not None and len(rows) > limit:
            step = len(rows) / limit
            rows = [rows[int(i * step)] for i in range(limit)]
        if not rows:
            continue
        real = transcript_stats((r.response, r.golden_answers) for r in rows)
        sim_rows = []
        for i, r in enumerate(rows):
            task = tasks[normalize_question(r.question)]
            executor.reset(task, seed=seed * 1_000_003 + i)
            while not executor.done:
                executor.step()
            sim_rows.append((executor.transcript, task.golden_answers))
        out.append(CalibrationRow(bench, real, transcript_stats(sim_rows), source))
    return out


def format_table(rows: Sequence[CalibrationRow], profile: str, source: str, tol: Tolerance = TOLERANCE) -> str:
    head = (
        "| benchmark | n | searches/task real / sim | repeated query real / sim | no answer real / sim "
        "| F1 real / sim | worst gap / allowed | within tolerance |\n|---|---|---|---|---|---|---|---|"
    )
    lines = [f"Calibration of {profile} against {source} (tolerance: {tol.describe()})", "", head]
    for row in rows:
        r, s = row.real, row.sim
        lines.append(
            f"| {row.benchmark} | {r.n} | {r.searches:.2f} / {s.searches:.2f} | {r.repeated:.1%} / {s.repeated:.1%} "
            f"| {r.no_answer:.1%} / {s.no_answer:.1%} | {r.f1:.1f} / {s.f1:.1f} | {row.worst_ratio(tol):.2f} "
            f"| {'yes' if row.within(tol) else 'NO'} |"
        )
    return "\n".join(lines)
