"""The one interface every supervising agent and baseline speaks: :class:`Policy`.

A policy acts on raw environment observations and returns an environment action (a catalogue index in
``action_mode="discrete"``, a string in ``"text"`` mode). Keeping the interface this small is what lets the
evaluation harness run the RL-trained steerer, the untrained steerer, "no supervision" and "random at the same
rate" through the same loop, on the same tasks and seeds (paired comparisons).

Randomness belongs to the policy: :meth:`Policy.reset` receives the episode seed, so a stochastic policy is
reproducible episode by episode whatever order the harness runs episodes in.
"""
from __future__ import annotations

import warnings
from typing import Any, Protocol, runtime_checkable

from steer_envs import episodes as _episodes
from steer_envs.episodes import play_episode


@runtime_checkable
class Policy(Protocol):
    """``reset(seed)`` before each episode; ``act(observation, info)`` at every decision point."""

    #: a short name used in tables and logs
    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; ``seed`` fixes the policy's own random choices for this episode."""

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """Return an action of the environment's action space (index or text)."""


# The episode record, the episode loop and the record-making loop live in ``steer_envs.episodes`` (one home for
# the harness, the ACTGUIDE evaluation and the baselines). ``play_episode`` keeps its name and signature here;
# the old ``EpisodeRecord(policy=...)`` and ``run_episode`` (which returned it) are deprecated aliases.
_DEPRECATED = {
    "EpisodeRecord": "agents.base.EpisodeRecord(policy=..., extra=...) is deprecated; use "
                     "steer_envs.episodes.EpisodeRecord(method=...) (the one episode record)",
    "run_episode": "agents.base.run_episode is deprecated; use steer_envs.episodes.run_episode (its record names "
                   "the policy in `method`, not `policy`)",
}


def _legacy_record(task_id: str, benchmark: str, seed: int, policy: str, reward: float, f1: float, em: float,
                   interventions: int, executor_turns: int, decisions: int,
                   extra: dict[str, Any] | None = None) -> _episodes.EpisodeRecord:
    """The old ``agents.base.EpisodeRecord`` signature, building the one record (``policy`` becomes ``method``)."""
    warnings.warn(_DEPRECATED["EpisodeRecord"], DeprecationWarning, stacklevel=2)
    if extra:
        raise TypeError(f"the episode record has no `extra` field (got keys {sorted(extra)}); keep extra values "
                        "beside the record (steer_envs.episodes.EpisodeRecord is frozen and written as-is to logs)")
    return _episodes.EpisodeRecord(method=policy, task_id=task_id, benchmark=benchmark, seed=seed, f1=f1, em=em,
                                   reward=reward, interventions=interventions, executor_turns=executor_turns,
                                   decisions=decisions)


def _legacy_run_episode(env: Any, policy: Policy, seed: int, task_id: str | None = None) -> _episodes.EpisodeRecord:
    """The old ``agents.base.run_episode(env, policy, seed, task_id)``: the one record, labelled ``policy.name``."""
    warnings.warn(_DEPRECATED["run_episode"], DeprecationWarning, stacklevel=2)
    return _episodes.run_episode(env, policy, seed, task_id)


__all__ = ["Policy", "play_episode"]


def __getattr__(name: str) -> Any:
    if name == "EpisodeRecord":
        return _legacy_record
    if name == "run_episode":
        return _legacy_run_episode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
