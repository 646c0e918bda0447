"""Sweeps: the deployment threshold τ, and transfer to executors the steerer was not trained on.

* τ sweep: one trained steerer (τ is a deployment knob: all rows share one checkpoint), evaluated at several
  τ next to no supervision in one run folder; the table gives interventions per task, the paired F1 gain and
  the gain *per intervention* (the paper: total gain grows with frequency, gain per intervention is highest at
  low frequency).
* transfer: train on one executor (``--train-executor``), then evaluate the *same* policy, without retraining,
  on other executors (other ``sim:`` profiles; LLM executors where they run). Each executor gets its own run
  folder under ``OUT/``, so each row is paired within its executor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from baselines.registry import MethodSpec, get_method, parse_method
from steer_envs.atomic import atomic_write_text

from .budget import build_measured
from .config import EvalConfig
from .runfolder import RunFolder
from .runner import REFERENCE, evaluate, method_context, write_summary
from .stats import MethodSummary
from .tables import gain_table


def with_option(spec: str, key: str, value: str) -> str:
    parsed = parse_method(spec)
    return MethodSpec(parsed.name, {**parsed.given, key: value}).label


def tau_sweep(out: str | Path, config: EvalConfig, method: str, taus: Sequence[float], progress: bool = True) -> str:
    """Evaluate ``method`` at each τ (plus no supervision) in run folder ``out``; write ``tau_sweep.md``."""
    if "tau" not in get_method(parse_method(method).name).options_type().option_names():
        from steer_envs.errors import SteerEnvsError

        raise SteerEnvsError(f"method {method!r} has no tau option; a τ sweep needs a steering method")
    folder = RunFolder(out, config)
    specs = [REFERENCE] + [with_option(method, "tau", f"{t:g}") for t in taus]
    for spec in specs:
        evaluate(folder, spec, progress=progress)
    summaries, _ = write_summary(folder)
    rows = [s for s in summaries if s.method in specs[1:]]
    text = tau_table(rows, [tau_of(s.method) for s in rows])
    atomic_write_text(folder.root / "tau_sweep.md", text)
    return text


def tau_of(label: str) -> float | None:
    m = re.search(r"(?:^|[:,])tau=([0-9.eE-]+)", label)
    return float(m.group(1)) if m else None


def tau_table(rows: Sequence[MethodSummary], taus: Sequence[float] | None = None) -> str:
    """Rows in τ order; the first column shows τ."""
    taus = list(taus) if taus is not None else [tau_of(s.method) or 0.0 for s in rows]
    order = sorted(range(len(rows)), key=lambda i: taus[i])
    renamed = [MethodSummary(**{**vars(rows[i]), "method": f"τ = {taus[i]:g}"}) for i in order]
    return gain_table(renamed, title="τ")


def executor_dirname(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_")


def transfer_sweep(
    out: str | Path,
    config: EvalConfig,
    methods: Sequence[str],
    train_executor: str,
    executors: Sequence[str],
    progress: bool = True,
) -> str:
    """Train each method on ``train_executor`` once; evaluate it unchanged on every executor in ``executors``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    source = RunFolder(
        out / executor_dirname(train_executor), replace(config, executor=train_executor, task_ids_sha="")
    )
    policies = {}
    for spec in methods:
        parsed = parse_method(spec)
        context = method_context(source, parsed.label, progress, parsed.training_label)
        policies[parsed.label] = build_measured(parsed, context)
    results: dict[str, dict] = {}
    for executor in executors:
        folder = RunFolder(out / executor_dirname(executor), replace(config, executor=executor, task_ids_sha=""))
        evaluate(folder, REFERENCE, progress=progress)
        for label, policy in policies.items():
            info = {"trained_on": train_executor}
            policy.run_info = {**dict(getattr(policy, "run_info", {}) or {}), **info}
            evaluate(folder, label, progress=progress, policy=policy)
        summaries, _ = write_summary(folder)
        results[executor] = {s.method: s for s in summaries}
    text = transfer_table(results, list(policies), train_executor)
    atomic_write_text(out / "transfer.md", text)
    (out / "transfer.json").write_text(
        json.dumps(
            {
                "train_executor": train_executor,
                "executors": list(executors),
                "methods": list(policies),
                "rows": {
                    ex: {
                        m: {
                            "avg_f1": s.avg_f1,
                            "gain": None if s.avg_gain is None else vars(s.avg_gain),
                            "interventions_per_task": s.interventions_per_task,
                            "turns_per_task": s.turns_per_task,
                        }
                        for m, s in rows.items()
                    }
                    for ex, rows in results.items()
                },
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    return text


def transfer_table(results: dict[str, dict[str, MethodSummary]], methods: Sequence[str], train_executor: str) -> str:
    lines = [
        "| Executor | Method | No-sup. F1 | F1 | Gain [95% CI] | Int./task | Turns/task (no-sup. → method) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for executor, rows in results.items():
        ref = rows.get(REFERENCE)
        for label in methods:
            s = rows.get(label)
            if s is None or ref is None:
                continue
            gain = (
                "–" if s.avg_gain is None else f"{s.avg_gain.mean:+.2f} [{s.avg_gain.low:+.2f}, {s.avg_gain.high:+.2f}]"
            )
            tag = " (train)" if executor == train_executor else ""
            lines.append(
                f"| `{executor}`{tag} | {label} | {ref.avg_f1:.2f} | {s.avg_f1:.2f} | {gain} | "
                f"{s.interventions_per_task:.2f} | {ref.turns_per_task:.2f} → {s.turns_per_task:.2f} |"
            )
    return "\n".join(lines) + "\n"
