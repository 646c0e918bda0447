"""Evaluation of an ACTGUIDE learner **without any hint**: success per task over ``n`` rollouts, Pass@K, and the
out-region split (tasks the *initial* policy never solves in 8 unguided tries).

Results are :class:`benchmarks`-style episode records (``EpisodeRecord``-shaped dicts: method, task, benchmark,
seed, em, f1, ...) so the harness statistics (task-level stratified bootstrap, seeds averaged per task) compare two
learners on exactly the same (task, seed) pairs.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.envs.guided import GuidedSearchEnv

from .rollout import reset_task, run_group


@dataclass(frozen=True)
class EvalEpisode:
    """One unguided evaluation episode (the fields of ``benchmarks.harness.records.EpisodeRecord``)."""

    method: str
    task_id: str
    benchmark: str
    seed: int
    f1: float
    em: float
    reward: float
    interventions: int = 0
    executor_turns: int = 0
    decisions: int = 0
    #: a service failed during the episode (``steer_envs.failures``): it has no outcome, and success_rate / pass_at_k
    #: leave it out instead of counting its 0 as a miss
    failed: bool = False


def evaluate(learner, env: GuidedSearchEnv, task_ids: Sequence[str], n: int, method: str, seed: int = 0,
             seed_offset: int = 0, k: int = 0) -> list[EvalEpisode]:
    """``n`` rollouts per task with guidance ``k`` (0: none); record seeds ``seed_offset + 0..n-1``."""
    cpu_thread_default(getattr(learner, "device", "cpu"))
    generator = torch.Generator().manual_seed(seed)
    out: list[EvalEpisode] = []
    for i, task_id in enumerate(task_ids):
        reset_task(env, task_id, int(np.random.default_rng([seed, i]).integers(2**31 - 1)), k)
        for r, traj in enumerate(run_group(env, learner, n, generator)):
            out.append(EvalEpisode(method, task_id, traj.benchmark, seed_offset + r, traj.f1, traj.em, traj.reward,
                                   0, traj.turns, len(traj.steps), traj.failed))
    return out


def pass_at_k(episodes: Sequence[EvalEpisode]) -> dict[str, bool]:
    """task -> whether any of its finished episodes succeeded (failed episodes are left out; a task whose episodes
    all failed has no entry)."""
    out: dict[str, bool] = defaultdict(bool)
    for e in episodes:
        if not e.failed:
            out[e.task_id] |= e.reward > 0
    return dict(out)


def success_rate(episodes: Sequence[EvalEpisode]) -> dict[str, float]:
    """task -> mean success over its finished episodes (failed episodes are left out; a task whose episodes all
    failed has no entry)."""
    acc: dict[str, list[float]] = defaultdict(list)
    for e in episodes:
        if not e.failed:
            acc[e.task_id].append(float(e.reward > 0))
    return {t: float(np.mean(v)) for t, v in acc.items()}
