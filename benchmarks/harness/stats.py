"""Summaries and paired 95% bootstrap intervals against a reference method (no supervision).

The unit of resampling is the *task*: seeds of one task are averaged first (they share the question, so they
are not independent), then tasks are resampled with replacement *within each benchmark* (stratified), and the
average column is the macro mean over benchmarks, as in the paper's tables. Pairing means the difference is
taken task by task between two methods that ran on exactly the same (task, seed) pairs; :func:`check_pairing`
enforces that before any interval is computed.

A *row* may hold several training seeds of one method (:class:`RowRuns`); then every resample also draws the
row's training seeds with replacement (:class:`HierarchicalBootstrap`), so its interval includes the variance
between training runs, not only evaluation noise.

**The average.** Every "Avg" in the suite is the macro mean over benchmarks (each benchmark's mean over its tasks,
then the plain mean of the benchmarks), as in the paper's tables. A mean over all tasks pooled would weight NQ
(775 test tasks) 20 times more than Bamboogle (36) and gives another number (an earlier page reported no
supervision at 46.2 pooled next to 39.9 macro); no table here uses it.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from steer_envs.episodes import EpisodeRecord
from steer_envs.errors import SteerEnvsError
from steer_envs.failures import CONTEXT_TRUNCATION


class PairingError(SteerEnvsError):
    """Two methods did not run on the same (task, seed) pairs, so they cannot be compared."""


@dataclass(frozen=True)
class Interval:
    """A point estimate with a 95% interval (all in F1 points, i.e. x100)."""

    mean: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclass
class MethodSummary:
    """One row of the paper-style table."""

    method: str
    n_tasks: int
    n_seeds: int
    f1: dict[str, float]  # benchmark -> mean F1 x100
    avg_f1: float  # macro mean over benchmarks
    interventions_per_task: float
    turns_per_task: float
    em: dict[str, float] = field(default_factory=dict)
    avg_em: float = 0.0
    gain: dict[str, Interval] = field(default_factory=dict)  # benchmark -> paired gain vs reference
    avg_gain: Interval | None = None
    gain_per_intervention: float | None = None
    n_train_seeds: int = 1  # runs (training seeds) averaged in this row
    labels: list[str] = field(default_factory=list)  # the run folder labels of those runs
    failed: int = 0  # this row's episodes a service failure truncated (excluded)
    dropped_pairs: int = 0  # (task, seed) pairs left out of every row: some row failed there
    context_truncations: int = 0  # kept episodes the agent's context overflow ended (scored, F1 0)

    @property
    def scored(self) -> bool:
        """Whether any task was scored: a row whose every (task, seed) pair failed (here or in another row) has no
        F1 at all (``avg_f1`` is NaN and tables show a dash), never an F1 of 0."""
        return self.n_tasks > 0


def _keys(records: Sequence[EpisodeRecord]) -> set[tuple[str, int]]:
    return {(r.task_id, r.seed) for r in records}


def check_pairing(by_method: dict[str, Sequence[EpisodeRecord]]) -> None:
    """Raise :class:`PairingError` unless every method ran on exactly the same (task, seed) pairs."""
    items = list(by_method.items())
    if not items:
        return
    ref_name, ref_records = items[0]
    ref = _keys(ref_records)
    for name, records in items[1:]:
        keys = _keys(records)
        if keys != ref:
            raise PairingError(
                f"methods {ref_name!r} and {name!r} ran on different (task, seed) pairs "
                f"({len(ref - keys)} only in the first, {len(keys - ref)} only in the second); "
                "finish both runs in the same run folder (`steer-envs eval` resumes) before comparing them"
            )


def failed_pairs(records: Sequence[EpisodeRecord]) -> set[tuple[str, int]]:
    """The (task, seed) pairs on which some episode failed (a service failure truncated it: no outcome)."""
    return {(r.task_id, r.seed) for r in records if getattr(r, "failed", False)}


def without_pairs(records: Sequence[EpisodeRecord], pairs: set[tuple[str, int]]) -> list[EpisodeRecord]:
    return [r for r in records if (r.task_id, r.seed) not in pairs] if pairs else list(records)


def without_failed_rows(rows: Sequence[RowRuns]) -> tuple[list[RowRuns], set[tuple[str, int]]]:
    """Failures are not rewards (``steer_envs.failures``): every (task, seed) pair on which any run of any row
    failed leaves every row, so means stay over real outcomes and paired differences stay paired."""
    dropped = failed_pairs([r for row in rows for recs in row.runs.values() for r in recs])
    if not dropped:
        return list(rows), dropped
    return [
        RowRuns(row.name, {label: without_pairs(recs, dropped) for label, recs in row.runs.items()}) for row in rows
    ], dropped


def _per_task(records: Sequence[EpisodeRecord], attr: str) -> dict[str, tuple[str, float]]:
    """task -> (benchmark, mean over seeds of ``attr``)."""
    acc: dict[str, list[float]] = defaultdict(list)
    bench: dict[str, str] = {}
    for r in records:
        acc[r.task_id].append(float(getattr(r, attr)))
        bench[r.task_id] = r.benchmark
    return {t: (bench[t], float(np.mean(v))) for t, v in acc.items()}


def benchmark_means(records: Sequence[EpisodeRecord], benchmarks: Sequence[str], attr: str = "f1") -> dict[str, float]:
    """Per benchmark of ``benchmarks`` that has records: the mean over its tasks of each task's mean over
    evaluation seeds (fractions, not x100). Records are taken as given (see :func:`macro_mean` for failures)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for bench, value in _per_task(records, attr).values():
        groups[bench].append(value)
    return {b: float(np.mean(groups[b])) for b in benchmarks if b in groups}


def macro_mean(records: Sequence[EpisodeRecord], benchmarks: Sequence[str], attr: str = "f1") -> float:
    """The suite's one average (a fraction, not x100): evaluation seeds averaged per task, tasks per benchmark,
    then the plain mean over the benchmarks of ``benchmarks`` that have records. Failed episodes are left out."""
    means = list(benchmark_means(without_pairs(records, failed_pairs(records)), benchmarks, attr).values())
    return float(np.mean(means)) if means else 0.0


@dataclass(frozen=True)
class RowRuns:
    """One table row: a method evaluated once per training seed (``runs``: label -> its episode records).

    A method that does not learn (or one training run) is a row with one run. Every run of every row must cover
    the same (task, seed) pairs."""

    name: str
    runs: dict[str, Sequence[EpisodeRecord]]

    def records(self) -> list[EpisodeRecord]:
        return [r for records in self.runs.values() for r in records]


class HierarchicalBootstrap:
    """Paired 95% intervals over rows that may have several training seeds.

    One resample draws tasks with replacement *within each benchmark* (the same draw for every row, which is what
    pairs two rows) and, independently for each row, its training seeds with replacement; a row's value on a task
    is the mean over its drawn training seeds of the task's evaluation-seed mean. Benchmarks are averaged as a
    macro mean (the suite's one definition of the average, as in the paper's tables). With one training seed per
    row this is the stratified task bootstrap of :func:`paired_gain`. Training-seed draws are keyed by the row name,
    so a row resamples identically in every comparison it enters.
    """

    def __init__(
        self, rows: Sequence[RowRuns], benchmarks: Sequence[str], attr: str = "f1", resamples: int = 2000, seed: int = 0
    ) -> None:
        check_pairing({label: recs for row in rows for label, recs in row.runs.items()})
        rows, self.dropped_pairs = without_failed_rows(rows)
        self.rows = {row.name: row for row in rows}
        if len(self.rows) != len(rows):
            raise SteerEnvsError("two rows share a name; give every row its own name")
        self.attr, self.resamples, self.seed = attr, resamples, seed
        first = next(iter(next(iter(rows)).runs.values())) if rows else []
        bench_of = {r.task_id: r.benchmark for r in first}
        self.benchmarks = [b for b in benchmarks if any(v == b for v in bench_of.values())]
        self.tasks = sorted(bench_of, key=lambda t: (self.benchmarks.index(bench_of[t]), t))
        self.column = {t: i for i, t in enumerate(self.tasks)}
        rng = np.random.default_rng(seed)
        self.task_draws: dict[str, np.ndarray] = {}
        self.bench_columns: dict[str, np.ndarray] = {}
        for bench in self.benchmarks:
            cols = np.array([self.column[t] for t in self.tasks if bench_of[t] == bench])
            self.bench_columns[bench] = cols
            self.task_draws[bench] = cols[rng.integers(0, len(cols), size=(resamples, len(cols)))]
        self._cache: dict[str, tuple[dict[str, np.ndarray], np.ndarray]] = {}

    def matrix(self, name: str) -> np.ndarray:
        """(training seeds x tasks): evaluation seeds averaged per task, x100."""
        runs = self.rows[name].runs
        out = np.zeros((len(runs), len(self.tasks)))
        for i, records in enumerate(runs.values()):
            for task, (_, value) in _per_task(records, self.attr).items():
                out[i, self.column[task]] = 100.0 * value
        return out

    def point(self, name: str) -> tuple[dict[str, float], float]:
        per_task = self.matrix(name).mean(axis=0)
        per_bench = {b: float(per_task[c].mean()) for b, c in self.bench_columns.items()}
        return per_bench, float(np.mean(list(per_bench.values()))) if per_bench else 0.0

    def draws(self, name: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Per-benchmark and macro values of row ``name`` in every resample."""
        if name not in self._cache:
            matrix = self.matrix(name)
            n_seeds = matrix.shape[0]
            if n_seeds == 1:
                values = np.broadcast_to(matrix[0], (self.resamples, matrix.shape[1]))
            else:
                rng = np.random.default_rng([self.seed, zlib.crc32(name.encode())])
                picks = rng.integers(0, n_seeds, size=(self.resamples, n_seeds))
                weights = np.stack([np.bincount(p, minlength=n_seeds) for p in picks]) / n_seeds
                values = weights @ matrix
            per_bench = {b: np.take_along_axis(values, d, axis=1).mean(axis=1) for b, d in self.task_draws.items()}
            macro = np.mean(np.stack(list(per_bench.values())), axis=0)
            self._cache[name] = (per_bench, macro)
        return self._cache[name]

    def gain(self, name: str, reference: str) -> tuple[dict[str, Interval], Interval]:
        """Paired difference ``name − reference`` per benchmark and on the macro average (points x100)."""
        (pa, a), (pb, b) = self.point(name), self.point(reference)
        (da, ma), (db, mb) = self.draws(name), self.draws(reference)
        per_bench = {bench: _interval(pa[bench] - pb[bench], da[bench] - db[bench]) for bench in pa}
        return per_bench, _interval(a - b, ma - mb)


def _interval(mean: float, draws: np.ndarray) -> Interval:
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return Interval(float(mean), float(lo), float(hi))


def paired_gain(
    method: Sequence[EpisodeRecord],
    reference: Sequence[EpisodeRecord],
    benchmarks: Sequence[str],
    attr: str = "f1",
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[dict[str, Interval], Interval]:
    """Per-benchmark and macro-average paired gains (x100) with stratified bootstrap 95% intervals."""
    check_pairing({"method": method, "reference": reference})
    boot = HierarchicalBootstrap(
        [RowRuns("method", {"method": method}), RowRuns("reference", {"reference": reference})],
        benchmarks,
        attr=attr,
        resamples=resamples,
        seed=seed,
    )
    return boot.gain("method", "reference")


def summarize(
    by_method: dict[str, Sequence[EpisodeRecord]],
    benchmarks: Sequence[str],
    reference: str | None = "no_supervision",
    resamples: int = 2000,
) -> list[MethodSummary]:
    """One :class:`MethodSummary` per method label (one run each), with gains vs ``reference`` if present."""
    return summarize_rows(
        [RowRuns(name, {name: recs}) for name, recs in by_method.items()], benchmarks, reference, resamples
    )


def _unscored(row: RowRuns, failed: int, dropped: int) -> MethodSummary:
    nan = float("nan")
    return MethodSummary(
        method=row.name,
        n_tasks=0,
        n_seeds=0,
        f1={},
        avg_f1=nan,
        avg_em=nan,
        interventions_per_task=nan,
        turns_per_task=nan,
        n_train_seeds=len(row.runs),
        labels=list(row.runs),
        failed=failed,
        dropped_pairs=dropped,
    )


def summarize_rows(
    rows: Sequence[RowRuns],
    benchmarks: Sequence[str],
    reference: str | None = "no_supervision",
    resamples: int = 2000,
    boot: HierarchicalBootstrap | None = None,
) -> list[MethodSummary]:
    """One :class:`MethodSummary` per row (in the given order); gains vs the row named ``reference`` if present,
    with intervals that resample tasks within benchmarks and each row's training seeds."""
    boot = boot or HierarchicalBootstrap(rows, benchmarks, resamples=resamples)
    ems = HierarchicalBootstrap(rows, benchmarks, attr="em", resamples=1) if rows else None
    names = [row.name for row in rows]
    failed = {row.name: len([r for r in row.records() if getattr(r, "failed", False)]) for row in rows}
    rows, dropped = without_failed_rows(rows)  # the per-task counters below leave failed pairs out too
    out = []
    for row in rows:
        records = row.records()
        if not records:  # nothing scored: no F1, no gain (a failure is not an outcome)
            out.append(_unscored(row, failed[row.name], len(dropped)))
            continue
        f1, avg_f1 = boot.point(row.name)
        em, avg_em = ems.point(row.name) if ems else ({}, 0.0)
        n = len(records)
        summary = MethodSummary(
            method=row.name,
            n_tasks=len({r.task_id for r in records}),
            n_seeds=len({r.seed for r in records}),
            f1=f1,
            avg_f1=avg_f1,
            em=em,
            avg_em=avg_em,
            interventions_per_task=sum(r.interventions for r in records) / max(n, 1),
            turns_per_task=sum(r.executor_turns for r in records) / max(n, 1),
            n_train_seeds=len(row.runs),
            labels=list(row.runs),
            failed=failed[row.name],
            dropped_pairs=len(dropped),
            context_truncations=sum(getattr(r, "truncation", None) == CONTEXT_TRUNCATION for r in records),
        )
        if reference in names and row.name != reference:
            summary.gain, summary.avg_gain = boot.gain(row.name, reference)
            if summary.interventions_per_task > 0:
                summary.gain_per_intervention = summary.avg_gain.mean / summary.interventions_per_task
        out.append(summary)
    return out
