"""Markdown tables shaped like the steering paper's: rows are methods, columns the seven benchmarks, the
average F1, interventions per task and executor turns per task; every non-reference cell carries the paired
gain against no supervision with its 95% interval."""

from __future__ import annotations

import math
from collections.abc import Sequence

from baselines.methods import BUILTIN_METHODS

from .stats import Interval, MethodSummary
from .verdicts import PAIRED_WORDS, PAIRWISE_WORDS, verdict

BENCHMARK_TITLES = {
    "nq": "NQ",
    "triviaqa": "TriviaQA",
    "popqa": "PopQA",
    "hotpotqa": "HotpotQA",
    "2wikimultihopqa": "2Wiki",
    "musique": "MuSiQue",
    "bamboogle": "Bamboogle",
}


def _gain(interval: Interval | None) -> str:
    if interval is None:
        return ""
    return f" ({interval.mean:+.1f} [{interval.low:+.1f}, {interval.high:+.1f}])"


def _number(value: float, digits: int) -> str:
    """A table cell: a dash where nothing was scored (NaN), never a number for it."""
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def any_failed(summaries: Sequence[MethodSummary]) -> bool:
    return any(getattr(s, "failed", 0) for s in summaries)


def failed_note(summaries: Sequence[MethodSummary]) -> str:
    """The line under a table with failed episodes ('' without any): failures are not rewards
    (``steer_envs.failures``), so they and their pairs are left out of every mean and interval."""
    if not any_failed(summaries):
        return ""
    counts = ", ".join(f"{s.method} {s.failed}" for s in summaries)
    dropped = max(getattr(s, "dropped_pairs", 0) for s in summaries)
    return (
        f"\n*Failed episodes (a model or retrieval service failed after its retries): {counts}. They are not "
        f"scored as 0: the {dropped} (task, seed) pair(s) with a failure in any row are left out of every row's "
        "means and intervals.*\n"
    )


def results_table(summaries: Sequence[MethodSummary], benchmarks: Sequence[str], with_intervals: bool = True) -> str:
    """The main table. Cells: ``F1 (gain [95% interval])``; the reference row has no gain. With failed episodes
    a ``Failed`` column counts them per method (they are excluded from the means) and a line says so."""
    failed = any_failed(summaries)
    head = ["Method", *(BENCHMARK_TITLES.get(b, b) for b in benchmarks), "Avg F1", "Int./task", "Turns/task"]
    head += ["Failed"] if failed else []
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for s in summaries:
        cells = [s.method]
        for b in benchmarks:
            value = s.f1.get(b)
            cells.append("–" if value is None else f"{value:.1f}" + (_gain(s.gain.get(b)) if with_intervals else ""))
        if s.scored:
            cells.append(f"**{s.avg_f1:.1f}**" + (_gain(s.avg_gain) if with_intervals else ""))
        else:
            cells.append("–")
        cells.append(_number(s.interventions_per_task, 2))
        cells.append(_number(s.turns_per_task, 2))
        if failed:
            cells.append(str(s.failed))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + failed_note(summaries)


def gain_table(summaries: Sequence[MethodSummary], title: str = "Method") -> str:
    """Compact table for sweeps: avg F1, paired gain, interventions/task, gain per intervention."""
    lines = [
        f"| {title} | Avg F1 | Gain vs none [95% CI] | Int./task | Gain / intervention | Turns/task |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        gain = "–" if s.avg_gain is None else f"{s.avg_gain.mean:+.2f} [{s.avg_gain.low:+.2f}, {s.avg_gain.high:+.2f}]"
        gpi = "–" if s.gain_per_intervention is None else f"{s.gain_per_intervention:+.2f}"
        lines.append(
            f"| {s.method} | {_number(s.avg_f1, 2)} | {gain} | {_number(s.interventions_per_task, 2)} | "
            f"{gpi} | {_number(s.turns_per_task, 2)} |"
        )
    return "\n".join(lines) + "\n"


# -- the rate-matched comparison (benchmarks.harness.comparison, the demo, docs/results.md) ----------------------
#: readable row names; a label not listed is shown as it is
DISPLAY_NAMES = {
    "no_supervision": "No supervision",
    "random": "Random (p chosen on dev)",
    "best_fixed_rule": "Best fixed rule (chosen on dev)",
    "fixed_rule": "Fixed rule",
    "always": "Always intervene",
    "drift_rule": "Drift rule",
    "steering_untrained": "Untrained steerer (same architecture, no RL)",
    "steering_zero_shot": "Zero-shot LLM steerer (prompted, no training)",
    "filtered_bc": "Filtered BC (RL's budget)",
    "sb3_ppo": "SB3 PPO (RL's budget)",
    "steering_rl": "RL steering (the paper's trainer)",
    "oracle": "Oracle (reads hidden state: headroom, not a contender)",
    "planning_untrained": "Planning, untrained",
    "planning_rl": "Planning, RL",
    "verification_untrained": "Verification, untrained",
    "verification_rl": "Verification, RL",
}


def headroom_names() -> frozenset[str]:
    """Rows that see what no real supervisor sees (a method registered with ``headroom=True``: the oracle reads
    hidden state), installed plugins included: shown as headroom, never marked best."""
    from baselines.registry import known_methods

    return frozenset(method.name for method in known_methods() if method.headroom)


#: the built-in headroom rows (the default of the table functions; :func:`headroom_names` adds plugins')
HEADROOM = frozenset(method.name for method in BUILTIN_METHODS.values() if method.headroom)


def display_name(row: str) -> str:
    """The readable name of a row; a label's options follow its method's name (``Fixed rule (at=1,option=verify)``)."""
    if row in DISPLAY_NAMES:
        return DISPLAY_NAMES[row]
    base, _, options = row.partition(":")
    if base in DISPLAY_NAMES:
        return f"{DISPLAY_NAMES[base]} ({options})" if options else DISPLAY_NAMES[base]
    return row


def _ci(interval: Interval | None, digits: int = 1) -> str:
    if interval is None:
        return "–"
    return f"{interval.mean:+.{digits}f} [{interval.low:+.{digits}f}, {interval.high:+.{digits}f}]"


def _method(summary: MethodSummary) -> str:
    return summary.method.split(":", 1)[0]


def _excluded(summary: MethodSummary, not_best: frozenset[str]) -> bool:
    """``not_best`` names a row by its method name (every ``oracle`` row) or by its whole label (one context row
    such as ``fixed_rule:at=1,option=refocus``, which leaves the other rows of that method in)."""
    return summary.method in not_best or _method(summary) in not_best


def best_row(summaries: Sequence[MethodSummary], not_best: frozenset[str] = HEADROOM) -> MethodSummary | None:
    """The row with the highest average F1 among those compared with the reference, rows of ``not_best`` excluded
    (headroom; in a rate-matched comparison also the rows at their own rate, which are at another operating point,
    and the context rows, which are not contenders)."""
    rows = [s for s in summaries if s.avg_gain is not None and not _excluded(s, not_best)]
    return max(rows, key=lambda s: s.avg_f1) if rows else None


def comparison_table(
    summaries: Sequence[MethodSummary],
    benchmarks: Sequence[str],
    budgets: dict[str, str],
    knobs: dict[str, str],
    not_best: frozenset[str] = HEADROOM,
) -> str:
    """Rows: methods (training seeds averaged); columns: F1 per benchmark, the macro average, its paired gain over
    no supervision with a 95% interval, interventions and executor turns per task, seeds, training budget, the
    operating point chosen on dev. The best row (:func:`best_row`) is marked ★ (highest average F1)."""
    best = best_row(summaries, not_best)
    failed = any_failed(summaries)
    head = [
        "Method",
        *(BENCHMARK_TITLES.get(b, b) for b in benchmarks),
        "Avg F1",
        "Gain vs none [95% CI]",
        "Int./task",
        "Turns/task",
        *(["Failed"] if failed else []),
        "Train seeds",
        "Budget (env steps)",
        "Operating point (dev)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|"]
    for s in summaries:
        mark = best is not None and s.method == best.method
        name = display_name(s.method)
        cells = [f"**★ {name}**" if mark else name]
        cells += ["–" if s.f1.get(b) is None else f"{s.f1[b]:.1f}" for b in benchmarks]
        cells.append(f"**{s.avg_f1:.1f}**" if mark else _number(s.avg_f1, 1))
        cells.append(_ci(s.avg_gain))
        cells += [
            _number(s.interventions_per_task, 2),
            _number(s.turns_per_task, 2),
            *([str(s.failed)] if failed else []),
            str(s.n_train_seeds),
            budgets.get(s.method, "–"),
            knobs.get(s.method, "–"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + failed_note(summaries)


def pairwise_table(pairs: Sequence[tuple[str, str, Interval]]) -> str:
    """``A − B`` paired on tasks (training seeds of both resampled), with the verdict the interval supports."""
    lines = ["| Comparison (A − B) | ΔF1 [95% CI] | Verdict |", "|---|---:|---|"]
    for a, b, interval in pairs:
        lines.append(
            f"| {display_name(a)} − {display_name(b)} | {_ci(interval, 2)} | {PAIRWISE_WORDS[verdict(interval)]} |"
        )
    return "\n".join(lines) + "\n"


def closing_line(
    summaries: Sequence[MethodSummary],
    main: str,
    rule: str | None,
    pairs: dict[tuple[str, str], Interval],
    not_best: frozenset[str] = HEADROOM,
) -> str:
    """One sentence: which row won (rows of ``not_best`` excluded: :func:`best_row`), and whether ``main`` (the
    comparison's focus row) beats ``rule`` (the bar: the best fixed rule in the paper's protocol)."""
    best = best_row(summaries, not_best)
    if best is None:
        return "**Verdict:** no method was compared with no supervision.\n"
    among = " of the rate-matched rows" if any(_excluded(s, not_best - HEADROOM) for s in summaries) else ""
    text = (
        f"**Verdict:** {display_name(best.method)} has the highest average F1{among} ({best.avg_f1:.1f}, "
        f"{_ci(best.avg_gain)} over no supervision at {best.interventions_per_task:.2f} interventions/task)"
    )
    if main in {s.method for s in summaries} and best.method != main:
        text += f"; {display_name(main)} does not"
    if rule is not None and (main, rule) in pairs:
        gap = pairs[(main, rule)]
        off_rate = [display_name(name) for name in (main, rule) if name in not_best]
        if off_rate:  # a row at another operating point gets no verdict against a rate-matched one
            text += f". No verdict against {display_name(rule)}: {' and '.join(off_rate)} not matched"
        else:
            words = PAIRED_WORDS[verdict(gap)]
            text += f". {display_name(main)} {words} {display_name(rule)} ({_ci(gap, 2)} F1, paired 95% CI)"
    return text + ".\n"
