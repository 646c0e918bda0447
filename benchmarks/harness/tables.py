"""Markdown tables shaped like the steering paper's: rows are methods, columns the seven benchmarks, the
average F1, interventions per task and executor turns per task; every non-reference cell carries the paired
gain against no supervision with its 95% interval."""
from __future__ import annotations

from collections.abc import Sequence

from .stats import Interval, MethodSummary

BENCHMARK_TITLES = {
    "nq": "NQ", "triviaqa": "TriviaQA", "popqa": "PopQA", "hotpotqa": "HotpotQA",
    "2wikimultihopqa": "2Wiki", "musique": "MuSiQue", "bamboogle": "Bamboogle",
}


def _gain(interval: Interval | None) -> str:
    if interval is None:
        return ""
    return f" ({interval.mean:+.1f} [{interval.low:+.1f}, {interval.high:+.1f}])"


def results_table(summaries: Sequence[MethodSummary], benchmarks: Sequence[str], with_intervals: bool = True) -> str:
    """The main table. Cells: ``F1 (gain [95% interval])``; the reference row has no gain."""
    head = ["Method", *(BENCHMARK_TITLES.get(b, b) for b in benchmarks), "Avg F1", "Int./task", "Turns/task"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for s in summaries:
        cells = [s.method]
        for b in benchmarks:
            value = s.f1.get(b)
            cells.append("–" if value is None else f"{value:.1f}" + (_gain(s.gain.get(b)) if with_intervals else ""))
        cells.append(f"**{s.avg_f1:.1f}**" + (_gain(s.avg_gain) if with_intervals else ""))
        cells.append(f"{s.interventions_per_task:.2f}")
        cells.append(f"{s.turns_per_task:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def gain_table(summaries: Sequence[MethodSummary], title: str = "Method") -> str:
    """Compact table for sweeps: avg F1, paired gain, interventions/task, gain per intervention."""
    lines = [f"| {title} | Avg F1 | Gain vs none [95% CI] | Int./task | Gain / intervention | Turns/task |",
             "|---|---:|---:|---:|---:|---:|"]
    for s in summaries:
        gain = "–" if s.avg_gain is None else f"{s.avg_gain.mean:+.2f} [{s.avg_gain.low:+.2f}, {s.avg_gain.high:+.2f}]"
        gpi = "–" if s.gain_per_intervention is None else f"{s.gain_per_intervention:+.2f}"
        lines.append(f"| {s.method} | {s.avg_f1:.2f} | {gain} | {s.interventions_per_task:.2f} | {gpi} | {s.turns_per_task:.2f} |")
    return "\n".join(lines) + "\n"
