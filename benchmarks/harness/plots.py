"""PNG plots for run folders (matplotlib, Agg backend: no display needed, same output on every machine)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .stats import MethodSummary  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def method_bars(summaries: Sequence[MethodSummary], path: Path) -> Path:
    """Average F1 per method; error bars: the paired 95% interval of the gain, placed on the method's F1."""
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(summaries) + 2), 4))
    names = [s.method for s in summaries]
    values = [s.avg_f1 for s in summaries]
    lows = [0 if s.avg_gain is None else s.avg_gain.mean - s.avg_gain.low for s in summaries]
    highs = [0 if s.avg_gain is None else s.avg_gain.high - s.avg_gain.mean for s in summaries]
    colors = [
        "#888888"
        if s.avg_gain is None
        else ("#2a7" if s.avg_gain.low > 0 else "#c44" if s.avg_gain.high < 0 else "#58a")
        for s in summaries
    ]
    ax.bar(range(len(names)), values, yerr=[lows, highs], color=colors, capsize=4)
    if summaries and summaries[0].avg_gain is None:
        ax.axhline(summaries[0].avg_f1, color="#444", lw=1, ls="--", label="no supervision")
        ax.legend(loc="lower right")
    ax.set_xticks(range(len(names)), [n if len(n) < 28 else n[:26] + "…" for n in names], rotation=30, ha="right")
    ax.set_ylabel("average F1 (x100)")
    ax.set_title("F1 by method (bars: paired 95% CI of the gain vs no supervision)")
    return _save(fig, path)


def tau_curve(rows: Sequence[MethodSummary], taus: Sequence[float], path: Path) -> Path:
    """Interventions per task vs F1 gain (left) and gain per intervention (right), one point per τ."""
    order = sorted(range(len(rows)), key=lambda i: rows[i].interventions_per_task)
    x = [rows[i].interventions_per_task for i in order]
    g = [rows[i].avg_gain.mean for i in order]
    lo = [rows[i].avg_gain.mean - rows[i].avg_gain.low for i in order]
    hi = [rows[i].avg_gain.high - rows[i].avg_gain.mean for i in order]
    gpi = [(rows[i].gain_per_intervention or 0.0) for i in order]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.errorbar(x, g, yerr=[lo, hi], marker="o", capsize=4)
    a.axhline(0, color="#444", lw=1, ls="--")
    for xi, gi, i in zip(x, g, order):
        a.annotate(f"τ={taus[i]:g}", (xi, gi), textcoords="offset points", xytext=(5, 5), fontsize=8)
    a.set_xlabel("interventions per task")
    a.set_ylabel("F1 gain vs no supervision (x100)")
    a.set_title("τ sweep: total gain")
    b.plot(x, gpi, marker="o")
    b.axhline(0, color="#444", lw=1, ls="--")
    b.set_xlabel("interventions per task")
    b.set_ylabel("F1 gain per intervention")
    b.set_title("τ sweep: gain per intervention")
    return _save(fig, path)


#: which logged quantities to draw for a training log, in order of preference
CURVE_KEYS = ("f1", "loss", "loss_rank", "loss_grpo", "mean_q", "intervention_rate", "adv_pos_frac")


def training_curves(log_path: Path, path: Path, title: str) -> Path | None:
    rows = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        return None
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for i, row in enumerate(rows):
        step = row.get("step", i)
        for key in CURVE_KEYS:
            if isinstance(row.get(key), (int, float)):
                series[key].append((float(step if step is not None else i), float(row[key])))
    keys = [k for k in CURVE_KEYS if len(series[k]) >= 1][:4]
    if not keys:
        return None
    fig, axes = plt.subplots(1, len(keys), figsize=(3.6 * len(keys), 3.2), squeeze=False)
    for ax, key in zip(axes[0], keys):
        xs, ys = zip(*series[key])
        ax.plot(xs, ys, marker="." if len(xs) < 40 else None)
        ax.set_title(key)
        ax.set_xlabel("round" if "round" in rows[0] else "step")
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def transfer_bars(rows: dict[str, dict[str, dict]], methods: Sequence[str], path: Path) -> Path:
    """Paired gain per executor, one bar group per executor."""
    executors = list(rows)
    width = 0.8 / max(1, len(methods))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(executors) + 2), 4))
    for j, method in enumerate(methods):
        xs, ys, lo, hi = [], [], [], []
        for i, ex in enumerate(executors):
            entry = rows[ex].get(method)
            if not entry or not entry.get("gain"):
                continue
            gain = entry["gain"]
            xs.append(i + j * width)
            ys.append(gain["mean"])
            lo.append(gain["mean"] - gain["low"])
            hi.append(gain["high"] - gain["mean"])
        ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, label=method[:40])
    ax.axhline(0, color="#444", lw=1)
    ax.set_xticks([i + width * (len(methods) - 1) / 2 for i in range(len(executors))], executors)
    ax.set_ylabel("F1 gain vs no supervision (x100)")
    ax.set_title("transfer without retraining (95% paired CI)")
    ax.legend(fontsize=8)
    return _save(fig, path)


def rate_curves(curves: dict[str, list[dict]], target: float, path: Path) -> Path:
    """Every knob method on one plot: F1 gain vs interventions per task (left, 95% CI bars), gain per intervention
    (right); the dashed line marks the rate the main table matches. Points come from ``Comparison.run_curves``."""
    from .tables import display_name

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.6))
    for name, points in curves.items():
        pts = sorted(points, key=lambda p: p["rate"])
        x = [p["rate"] for p in pts]
        g = [p["gain"]["mean"] for p in pts]
        err = [
            [p["gain"]["mean"] - p["gain"]["low"] for p in pts],
            [p["gain"]["high"] - p["gain"]["mean"] for p in pts],
        ]
        line = a.errorbar(x, g, yerr=err, marker="o", capsize=3, label=display_name(name))
        usable = [
            (p["rate"], p["gain_per_intervention"])
            for p in pts
            if p["rate"] > 0.01 and p["gain_per_intervention"] is not None
        ]
        if usable:
            b.plot(*zip(*usable), marker="o", color=line[0].get_color(), label=display_name(name))
    for ax in (a, b):
        ax.axvline(target, color="#888", lw=1, ls="--")
        ax.axhline(0, color="#444", lw=1)
        ax.set_xlabel("interventions per task")
    a.set_ylabel("F1 gain vs no supervision (x100, 95% CI)")
    a.set_title("total gain (dashed: the main table's rate)")
    b.set_ylabel("F1 gain per intervention")
    b.set_title("gain per intervention")
    a.legend(fontsize=8, loc="best")
    return _save(fig, path)
