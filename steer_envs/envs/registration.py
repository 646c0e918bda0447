"""Gymnasium registration of the environment ids (run on ``import steer_envs``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from ..ids import NAMESPACE  # noqa: F401  (re-exported: the ids live in steer_envs.ids)


@dataclass(frozen=True)
class EnvEntry:
    name: str
    entry_point: str
    description: str
    kwargs: dict[str, Any] = field(default_factory=lambda: {"executor": "sim:default"})


ENVS: tuple[EnvEntry, ...] = (
    EnvEntry("SearchSteering-v0", "steer_envs.envs.steering:SearchSteeringEnv", "steer at every executor turn"),
    EnvEntry("SearchPlanning-v0", "steer_envs.envs.planning:SearchPlanningEnv", "one plan before execution"),
    EnvEntry(
        "SearchVerification-v0",
        "steer_envs.envs.verification:SearchVerificationEnv",
        "accept or reject each proposed answer",
    ),
    EnvEntry(
        "GuidedSearch-v0",
        "steer_envs.envs.guided:GuidedSearchEnv",
        "the search agent learns, guided by reference action sequences (ACTGUIDE-RL)",
        kwargs={},
    ),
    EnvEntry(
        "HandoffSteering-v0",
        "steer_envs.envs.handoff:HandoffSteeringEnv",
        "steer at every hand-off of a five-role pipeline",
    ),
)


def env_ids() -> list[str]:
    return [f"{NAMESPACE}/{e.name}" for e in ENVS]


def register_envs() -> None:
    """Register every id once (re-imports are harmless). The supervision envs default to the simulated executor
    (deterministic under a seed; pass ``executor=`` to ``gymnasium.make`` for another); GuidedSearch has no
    executor: the learner is the searcher.

    No id registers a ``vector_entry_point``: gymnasium (1.x) makes a registered one the *default* of
    ``gymnasium.make_vec(id, n)`` and that mode refuses ``wrappers=`` and ``vector_kwargs=``, so registering it
    would break every existing ``make_vec`` call. ``make_vec(id, n)`` stays gymnasium's SyncVectorEnv; the
    concurrent vector env is opt-in: ``steer_envs.make_concurrent_vec(id, n, ...)`` (or a spec carrying
    :class:`~steer_envs.vector.VectorEntryPoint`, see there)."""
    for entry in ENVS:
        env_id = f"{NAMESPACE}/{entry.name}"
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs), nondeterministic=False)
