"""The one interface every supervising agent and baseline speaks: :class:`Policy`.

A policy acts on raw environment observations and returns an environment action (a catalogue index in
``action_mode="discrete"``, a string in ``"text"`` mode). Keeping the interface this small is what lets the
evaluation harness run the RL-trained steerer, the untrained steerer, "no supervision" and "random at the same
rate" through the same loop, on the same tasks and seeds (paired comparisons).

Randomness belongs to the policy: :meth:`Policy.reset` receives the episode seed, so a stochastic policy is
reproducible episode by episode whatever order the harness runs episodes in.
"""

from __future__ import annotations

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


__all__ = ["Policy"]
