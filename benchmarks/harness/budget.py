"""A learned method's budget: the env steps its training consumed (counterfactual continuations included).

:func:`build_measured` builds a method's policy (training it, or loading its checkpoint) and reads the env-step
meter (:mod:`steer_envs.meter`) around it; the steps are added to ``budget.json`` in the method's checkpoint
folder, so a training resumed after an interruption adds what the rest cost, and a later build that only loads
the checkpoint adds nothing. Methods that choose on dev while building (``best_fixed_rule``) count those dev
steps too. The number is a measurement: nothing is estimated from the config.

Run folders may share one checkpoints folder, and two commands may run at once on it (a table and its
confirmation on other tasks): a learning method builds under an exclusive lock on its checkpoint folder
(:func:`build_lock`), so the second build of one checkpoint waits for the first and then loads what it trained,
instead of training the same model again beside it and racing it for the files.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baselines.registry import MethodContext, MethodSpec, build_policy, get_method
from steer_envs.atomic import atomic_write_json
from steer_envs.meter import env_steps

BUDGET_FILE = "budget.json"
#: the file a build holds an exclusive lock on, in the method's checkpoint folder
BUILD_LOCK_FILE = ".build.lock"


@dataclass
class Budget:
    """Env steps and wall seconds spent building a method (summed over resumed builds)."""

    env_steps: int = 0
    seconds: float = 0.0
    builds: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def read(checkpoint_dir: str | Path | None) -> Budget | None:
        if checkpoint_dir is None:
            return None
        path = Path(checkpoint_dir) / BUDGET_FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return Budget(int(data.get("env_steps", 0)), float(data.get("seconds", 0.0)), list(data.get("builds", [])))


@contextmanager
def build_lock(checkpoint_dir: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``checkpoint_dir`` (created if missing) while a method builds in it; another
    process building the same checkpoint blocks until it is released. The OS drops the lock if the holder dies."""
    path = Path(checkpoint_dir)
    path.mkdir(parents=True, exist_ok=True)
    with open(path / BUILD_LOCK_FILE, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_measured(spec: MethodSpec, context: MethodContext) -> Any:
    """``build_policy`` with its env steps and wall time added to ``<workdir>/budget.json`` (learning methods,
    built under :func:`build_lock`)."""
    learns = get_method(spec.name).learns and context.workdir is not None
    if not learns:
        return build_policy(spec, context)
    with build_lock(context.workdir):
        before, start = env_steps(), time.perf_counter()
        policy = build_policy(spec, context)
        steps, seconds = env_steps() - before, time.perf_counter() - start
        budget = Budget.read(context.workdir) or Budget()
        if steps > 0 or not budget.builds:
            budget.env_steps += steps
            budget.seconds += seconds
            budget.builds.append({"env_steps": steps, "seconds": round(seconds, 1)})
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
