"""What several agent and engine tests build alike: a small ACTGUIDE-RL run on the real env (two benchmarks, four
tasks each, three tasks of four rollouts a batch, four turns), which each test sizes with its own budget, and
``steer-envs eval`` run in a fresh process as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.actguide.config import ActGuideConfig


def small_actguide_args(**overrides: Any) -> dict[str, Any]:
    """The small run's ``ActGuideConfig`` keyword arguments (a fresh dict), ``overrides`` replacing or adding fields."""
    return {
        "benchmarks": ["musique", "nq"],
        "tasks_per_benchmark": 4,
        "budget": 120,
        "batch_tasks": 3,
        "group_size": 4,
        "max_turns": 4,
        "update_epochs": 2,
        **overrides,
    }


def small_actguide(**overrides: Any) -> ActGuideConfig:
    """The small run's config, ``overrides`` replacing or adding fields."""
    return ActGuideConfig(**small_actguide_args(**overrides))


def eval_in_subprocess(
    out: Path, methods: Sequence[str], *, benchmark: str, limit: int, max_turns: int, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``steer-envs eval`` of ``methods`` in a fresh process on ``benchmark``'s dev split (``limit`` tasks, one seed
    each, no progress bars), writing the run folder ``out``; its output captured."""
    command = [sys.executable, "-m", "steer_envs.cli.main", "eval", "--method", *methods, "--out", str(out)]
    command += ["--benchmarks", benchmark, "--split", "dev", "--limit", str(limit), "--seeds", "1"]
    command += ["--max-turns", str(max_turns), "--no-progress"]
    return subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=timeout)
