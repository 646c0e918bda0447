"""A per-intervention cost on top of any environment that reports ``info["interventions"]``.

The envs take ``intervention_cost=`` directly; the wrapper exists so the cost can be changed on an env someone
else built (a sweep over costs, a replayed env) and so the same shaping works for every supervision env.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from ..errors import SteerEnvsError


class InterventionCost(gym.Wrapper):
    """Subtract ``cost`` for every new intervention counted in ``info["interventions"]`` since the last step."""

    def __init__(self, env: gym.Env, cost: float) -> None:
        super().__init__(env)
        if cost < 0:
            raise SteerEnvsError(f"intervention cost must be >= 0, got {cost}")
        self.cost = float(cost)
        self._seen = 0

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._seen = int(info.get("interventions", 0))
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        count = int(info.get("interventions", self._seen))
        new = max(0, count - self._seen)
        self._seen = count
        return obs, float(reward) - self.cost * new, terminated, truncated, info
