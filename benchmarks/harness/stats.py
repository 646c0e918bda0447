"""Summaries and paired 95% bootstrap intervals against a reference method (no supervision).

The unit of resampling is the *task*: seeds of one task are averaged first (they share the question, so they
are not independent), then tasks are resampled with replacement *within each benchmark* (stratified), and the
average column is the macro mean over benchmarks, as in the paper's tables. Pairing means the difference is
taken task by task between two methods that ran on exactly the same (task, seed) pairs; :func:`check_pairing`
enforces that before any interval is computed.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from steer_envs.errors import SteerEnvsError

from .records import EpisodeRecord


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
    f1: dict[str, float]                         # benchmark -> mean F1 x100
    avg_f1: float                                # macro mean over benchmarks
    interventions_per_task: float
    turns_per_task: float
    em: dict[str, float] = field(default_factory=dict)
    avg_em: float = 0.0
    gain: dict[str, Interval] = field(default_factory=dict)   # benchmark -> paired gain vs reference
    avg_gain: Interval | None = None
    gain_per_intervention: float | None = None


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


def _per_task(records: Sequence[EpisodeRecord], attr: str) -> dict[str, tuple[str, float]]:
    """task -> (benchmark, mean over seeds of ``attr``)."""
    acc: dict[str, list[float]] = defaultdict(list)
    bench: dict[str, str] = {}
    for r in records:
        acc[r.task_id].append(float(getattr(r, attr)))
        bench[r.task_id] = r.benchmark
    return {t: (bench[t], float(np.mean(v))) for t, v in acc.items()}


def _by_benchmark(per_task: dict[str, tuple[str, float]], order: Sequence[str]) -> dict[str, np.ndarray]:
    groups: dict[str, list[float]] = defaultdict(list)
    for task in sorted(per_task):
        bench, value = per_task[task]
        groups[bench].append(value)
    return {b: np.asarray(groups[b]) for b in order if b in groups}


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
    m, r = _per_task(method, attr), _per_task(reference, attr)
    diffs = {t: (m[t][0], 100.0 * (m[t][1] - r[t][1])) for t in m}
    groups = _by_benchmark(diffs, benchmarks)
    rng = np.random.default_rng(seed)
    boot_means = {}
    per_bench: dict[str, Interval] = {}
    for bench, values in groups.items():
        idx = rng.integers(0, len(values), size=(resamples, len(values)))
        boot = values[idx].mean(axis=1)
        boot_means[bench] = boot
        lo, hi = np.percentile(boot, [2.5, 97.5])
        per_bench[bench] = Interval(float(values.mean()), float(lo), float(hi))
    macro_boot = np.mean(np.stack(list(boot_means.values())), axis=0)
    lo, hi = np.percentile(macro_boot, [2.5, 97.5])
    avg = Interval(float(np.mean([v.mean() for v in groups.values()])), float(lo), float(hi))
    return per_bench, avg


def summarize(
    by_method: dict[str, Sequence[EpisodeRecord]],
    benchmarks: Sequence[str],
    reference: str | None = "no_supervision",
    resamples: int = 2000,
) -> list[MethodSummary]:
    """One :class:`MethodSummary` per method (in the given order), with gains vs ``reference`` if present."""
    check_pairing(by_method)
    out = []
    ref_records = by_method.get(reference) if reference else None
    for name, records in by_method.items():
        f1 = {b: 100.0 * float(v.mean()) for b, v in _by_benchmark(_per_task(records, "f1"), benchmarks).items()}
        em = {b: 100.0 * float(v.mean()) for b, v in _by_benchmark(_per_task(records, "em"), benchmarks).items()}
        n = len(records)
        summary = MethodSummary(
            method=name,
            n_tasks=len({r.task_id for r in records}),
            n_seeds=len({r.seed for r in records}),
            f1=f1,
            avg_f1=float(np.mean(list(f1.values()))) if f1 else 0.0,
            em=em,
            avg_em=float(np.mean(list(em.values()))) if em else 0.0,
            interventions_per_task=sum(r.interventions for r in records) / max(n, 1),
            turns_per_task=sum(r.executor_turns for r in records) / max(n, 1),
        )
        if ref_records is not None and name != reference:
            summary.gain, summary.avg_gain = paired_gain(records, ref_records, benchmarks, resamples=resamples)
            if summary.interventions_per_task > 0:
                summary.gain_per_intervention = summary.avg_gain.mean / summary.interventions_per_task
        out.append(summary)
    return out
