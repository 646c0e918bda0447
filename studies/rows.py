"""A study's test rows and paired differences, by the harness's one bootstrap and one verdict rule.

Every study that evaluates rows on the same tasks and seeds reports them the same way: each row's F1, rate, turns,
training runs, episodes and failures (:func:`benchmarks.harness.stats.summarize_rows`), and each pair's interval
(:class:`~benchmarks.harness.stats.HierarchicalBootstrap`: tasks resampled within benchmarks, training seeds per row)
with its verdict (:func:`benchmarks.harness.verdicts.verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from benchmarks.harness.stats import HierarchicalBootstrap, Interval, RowRuns, summarize_rows
from benchmarks.harness.verdicts import verdict


def paired_rows(
    rows: dict[str, RowRuns], benchmarks: Sequence[str], pairs: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """``{"rows": {row: figures}, "gains": {"a - b": interval and verdict}}`` for ``pairs`` of (row, reference)."""
    boot = HierarchicalBootstrap(list(rows.values()), benchmarks)
    summary = {
        s.method: {
            "f1": round(s.avg_f1, 3),
            "interventions_per_task": round(s.interventions_per_task, 4),
            "turns_per_task": round(s.turns_per_task, 4),
            "runs": len(rows[s.method].runs),
            "episodes": len(rows[s.method].records()),
            "failed": s.failed,
        }
        for s in summarize_rows(list(rows.values()), benchmarks, reference=None, boot=boot)
    }
    gains = {}
    for row, reference in pairs:
        interval: Interval = boot.gain(row, reference)[1]
        gains[f"{row} - {reference}"] = {**asdict(interval), "verdict": verdict(interval)}
    return {"rows": summary, "gains": gains}


def ladder_places(gains: dict[str, Any], names: Sequence[str], ceiling: float | None) -> dict[str, float | None]:
    """Each row's place on a ladder's scale: its gain over the ladder's best fixed rule (``"<row> - best_fixed_rule"``
    in ``gains``) over the ceiling's (``ceiling``; None where the ladder has none)."""
    return {name: round(gains[f"{name} - best_fixed_rule"]["mean"] / ceiling, 3) if ceiling else None for name in names}
