"""Evaluation of an ACTGUIDE learner **without any hint**: success per task over ``n`` rollouts, Pass@K, and the
out-region split (tasks the *initial* policy never solves in 8 unguided tries).

Results are :class:`steer_envs.episodes.EpisodeRecord` (the harness's record: method, task, benchmark, seed, em,
f1, ...) so the harness statistics (task-level stratified bootstrap, seeds averaged per task) compare two
learners on exactly the same (task, seed) pairs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch

from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.envs.guided import GuidedSearchEnv
from steer_envs.episodes import EpisodeRecord, rollout_group_seed

from .rollout import reset_task, run_group


def evaluate(
    learner,
    env: GuidedSearchEnv,
    task_ids: Sequence[str],
    n: int,
    method: str,
    seed: int = 0,
    seed_offset: int = 0,
    k: int = 0,
) -> list[EpisodeRecord]:
    """``n`` rollouts per task with guidance ``k`` (0: none); record seeds ``seed_offset + 0..n-1``."""
    cpu_thread_default(getattr(learner, "device", "cpu"))
    generator = torch.Generator().manual_seed(seed)
    out: list[EpisodeRecord] = []
    for i, task_id in enumerate(task_ids):
        reset_task(env, task_id, rollout_group_seed(seed, i), k)
        for r, traj in enumerate(run_group(env, learner, n, generator)):
            out.append(
                EpisodeRecord(
                    method=method,
                    task_id=task_id,
                    benchmark=traj.benchmark,
                    seed=seed_offset + r,
                    f1=traj.f1,
                    em=traj.em,
                    reward=traj.reward,
                    interventions=0,
                    executor_turns=traj.turns,
                    decisions=len(traj.steps),
                    failed=traj.failed,
                )
            )
    return out


def pass_at_k(episodes: Sequence[EpisodeRecord]) -> dict[str, bool]:
    """task -> whether any of its finished episodes succeeded (failed episodes are left out; a task whose episodes
    all failed has no entry)."""
    out: dict[str, bool] = defaultdict(bool)
    for e in episodes:
        if not e.failed:
            out[e.task_id] |= e.reward > 0
    return dict(out)


def success_rate(episodes: Sequence[EpisodeRecord]) -> dict[str, float]:
    """task -> mean success over its finished episodes (failed episodes are left out; a task whose episodes all
    failed has no entry)."""
    acc: dict[str, list[float]] = defaultdict(list)
    for e in episodes:
        if not e.failed:
            acc[e.task_id].append(float(e.reward > 0))
    return {t: float(np.mean(v)) for t, v in acc.items()}
