"""How stable a comparison's ranking is over training seeds, from its compact summary's stored episodes.

Why: a table row averages its training runs, so two rows a point apart may swap with another seed. Ranking the
rate-matched rows once per training seed (the i-th training run of every learned row against the single run of
each fixed row, on the same tasks and evaluation seeds) shows whether the order holds. Own-rate rows and the oracle
are not ranked: they are context, not contenders at the same rate.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .tables import HEADROOM, display_name


@dataclass(frozen=True)
class SeedRanking:
    """The rate-matched rows of one training seed, best first, with their macro-average F1 (x100)."""

    seed: int
    order: list[tuple[str, float]]


def macro_f1(episodes: list[dict[str, Any]], benchmarks: list[str]) -> float:
    """Benchmark-macro mean F1 (x100): evaluation seeds averaged per task, tasks per benchmark, then benchmarks."""
    per_task: dict[tuple[str, str], list[float]] = defaultdict(list)
    for e in episodes:
        per_task[(e["benchmark"], e["task_id"])].append(e["f1"])
    per_benchmark: dict[str, list[float]] = defaultdict(list)
    for (bench, _), values in per_task.items():
        per_benchmark[bench].append(sum(values) / len(values))
    means = [sum(v) / len(v) for b in benchmarks if (v := per_benchmark.get(b))]
    return 100 * sum(means) / len(means) if means else float("nan")


def seed_rankings(summary: dict[str, Any], episodes: list[dict[str, Any]]) -> list[SeedRanking]:
    """One ranking per training seed of the summary's rate-matched rows (a fixed row's one run counts in each)."""
    own_rate = set(summary["plan"].get("own_rate_rows") or [])
    rows = {n: r for n, r in summary["rows"].items() if n not in own_rate and n not in HEADROOM}
    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in episodes:
        if not e.get("failed"):
            by_label[e["label"]].append(e)
    seeds = max(len(r["labels"]) for r in rows.values())
    rankings = []
    for i in range(seeds):
        scores = []
        for name, row in rows.items():
            label = row["labels"][i] if i < len(row["labels"]) else row["labels"][0]
            scores.append((name, macro_f1(by_label[label], summary["benchmarks"])))
        rankings.append(SeedRanking(i, sorted(scores, key=lambda s: -s[1])))
    return rankings


def ranking_markdown(rankings: list[SeedRanking], focus: str) -> str:
    """A table of the order per training seed and a line on where ``focus`` (RL steering) lands in each."""
    lines = ["| Training seed | Rate-matched rows, best first (avg F1) |", "|---:|---|"]
    places = []
    for r in rankings:
        cells = " > ".join(f"{display_name(name)} {f1:.1f}" for name, f1 in r.order)
        lines.append(f"| {r.seed} | {cells} |")
        places.append(next(i for i, (name, _) in enumerate(r.order) if name == focus) + 1)
    firsts = {r.order[0][0] for r in rankings}
    stable = "the same row is first with every seed" if len(firsts) == 1 else "the first row changes with the seed"
    return (
        "\n".join(lines)
        + f"\n\n{display_name(focus)} ranks {', '.join(map(str, places))} of {len(rankings[0].order)} with training "
        f"seeds {', '.join(str(r.seed) for r in rankings)}; {stable}.\n"
    )
