"""A learned method's budget: the env steps its training consumed (counterfactual continuations included).

:func:`build_measured` builds a method's policy (training it, or loading its checkpoint) and reads the env-step
meter (:mod:`steer_envs.meter`) around it; the steps are added to ``budget.json`` in the method's checkpoint
folder, so a training resumed after an interruption adds what the rest cost, and a later build that only loads
the checkpoint adds nothing. Methods that choose on dev while building (``best_fixed_rule``) count those dev
steps too. The number is a measurement: nothing is estimated from the config.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from steer_envs.atomic import atomic_write_json
from baselines.registry import MethodContext, MethodSpec, build_policy, get_method
from steer_envs.meter import env_steps

BUDGET_FILE = "budget.json"


@dataclass
class Budget:
    """Env steps and wall seconds spent building a method (summed over resumed builds)."""

    env_steps: int = 0
    seconds: float = 0.0
    builds: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def read(checkpoint_dir: str | Path | None) -> "Budget | None":
        if checkpoint_dir is None:
            return None
        path = Path(checkpoint_dir) / BUDGET_FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return Budget(int(data.get("env_steps", 0)), float(data.get("seconds", 0.0)), list(data.get("builds", [])))


def build_measured(spec: MethodSpec, context: MethodContext) -> Any:
    """``build_policy`` with its env steps and wall time added to ``<workdir>/budget.json`` (learning methods)."""
    before, start = env_steps(), time.perf_counter()
    policy = build_policy(spec, context)
    steps, seconds = env_steps() - before, time.perf_counter() - start
    if get_method(spec.name).learns and context.workdir is not None:
        budget = Budget.read(context.workdir) or Budget()
        if steps > 0 or not budget.builds:
            budget.env_steps += steps
            budget.seconds += seconds
            budget.builds.append({"env_steps": steps, "seconds": round(seconds, 1)})
            Path(context.workdir).mkdir(parents=True, exist_ok=True)
            atomic_write_json(Path(context.workdir) / BUDGET_FILE, asdict(budget))
    return policy


def format_steps(steps: float | None) -> str:
    """``1.23M``, ``45.6k``, ``812``; ``–`` for none."""
    if steps is None:
        return "–"
    if steps >= 1e6:
        return f"{steps / 1e6:.2f}M"
    if steps >= 1e4:
        return f"{steps / 1e3:.0f}k"
    if steps >= 1e3:
        return f"{steps / 1e3:.1f}k"
    return f"{steps:.0f}"
