"""The one interface every supervising agent and baseline speaks: :class:`Policy`.

A policy acts on raw environment observations and returns an environment action (a catalogue index in
``action_mode="discrete"``, a string in ``"text"`` mode). Keeping the interface this small is what lets the
evaluation harness run the RL-trained steerer, the untrained steerer, "no supervision" and "random at the same
rate" through the same loop, on the same tasks and seeds (paired comparisons).

Randomness belongs to the policy: :meth:`Policy.reset` receives the episode seed, so a stochastic policy is
reproducible episode by episode whatever order the harness runs episodes in.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Policy(Protocol):
    """``reset(seed)`` before each episode; ``act(observation, info)`` at every decision point."""

    #: a short name used in tables and logs
    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; ``seed`` fixes the policy's own random choices for this episode."""

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """Return an action of the environment's action space (index or text)."""


@dataclass
class EpisodeRecord:
    """What one supervised episode produced (final ``info`` values of the environment)."""

    task_id: str
    benchmark: str
    seed: int
    policy: str
    reward: float
    f1: float
    em: float
    interventions: int
    executor_turns: int
    decisions: int
    extra: dict[str, Any] = field(default_factory=dict)


def play_episode(env: Any, policy: Policy, seed: int, task_id: str | None = None) -> tuple[float, int, dict]:
    """The bare episode loop: ``(return, decisions, final info)``. Env and policy are reset with the same seed.

    A policy that must look ahead in the environment itself (the lookahead oracle forks it) declares
    ``bind(env)``; it is called once per episode, before the first action."""
    options = {"task_id": task_id} if task_id is not None else None
    observation, info = env.reset(seed=seed, options=options)
    policy.reset(seed)
    bind = getattr(policy, "bind", None)
    if bind is not None:
        bind(env)
    total, decisions = 0.0, 0
    terminated = truncated = False
    while not (terminated or truncated):
        action = policy.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        decisions += 1
    return total, decisions, info


def run_episode(env: Any, policy: Policy, seed: int, task_id: str | None = None) -> EpisodeRecord:
    """Run ``policy`` on ``env`` for one episode (``task_id`` picks the task) and return its record.

    The environment is reset with ``seed`` and the policy with the same seed, so two policies run on the same
    ``(task_id, seed)`` see the same executor randomness up to their first diverging action.
    """
    total, decisions, info = play_episode(env, policy, seed, task_id)
    return EpisodeRecord(
        task_id=str(info.get("task_id", task_id)),
        benchmark=str(info.get("benchmark", "")),
        seed=seed,
        policy=policy.name,
        reward=total,
        f1=float(info.get("f1", 0.0)),
        em=float(info.get("em", 0.0)),
        interventions=int(info.get("interventions", 0)),
        executor_turns=int(info.get("executor_turns", 0)),
        decisions=decisions,
    )
