"""SteeringAgent: fast scorer -> gate -> slow policy, acting on environment observations (a :class:`Policy`).

The agent holds a steerer (the parameters θ) and a deployment threshold ``tau``. At each decision point it
computes ``z`` once, draws the gate (or thresholds it when ``deterministic``), and only when the gate opens runs
the slow path, whose output becomes the environment action. Changing ``tau`` changes the intervention rate
without retraining.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from steer_envs.envs.task_env import ACTION_MODES
from steer_envs.errors import SteerEnvsError

from .gate import check_tau, gate_decision, gate_probability, priority
from .steerer import SlowSample, Steerer


class SteeringAgent:
    """A :class:`agents.base.Policy`. ``last`` keeps the latest decision (z, p, slow sample) for logging."""

    #: what a method's deployment chose (set by the method when it has something to say; read into the run card)
    run_info: dict[str, Any]

    def __init__(
        self,
        steerer: Steerer,
        tau: float = 0.5,
        action_mode: str = "text",
        deterministic: bool = False,
        greedy_slow: bool = False,
        name: str = "steering",
        seed: int = 0,
    ) -> None:
        if action_mode not in ACTION_MODES:
            raise SteerEnvsError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        self.steerer = steerer
        steerer.set_action_mode(action_mode)
        self.tau = check_tau(tau)
        self.action_mode = action_mode
        self.deterministic = deterministic
        self.greedy_slow = greedy_slow
        self.name = name
        self._seed = seed
        self.reset(seed)
        self.last: dict[str, Any] = {}

    def reset(self, seed: int | None = None) -> None:
        base = self._seed if seed is None else seed
        self.rng = np.random.default_rng([base, 0x5EE7])
        self.generator = torch.Generator().manual_seed(int(self.rng.integers(2**31)))

    def counters(self) -> dict[str, int]:
        """The steerer's counters (the harness stores each episode's change in its record)."""
        return self.steerer.counters()

    def priority(self, observation: Any) -> float:
        with torch.no_grad():
            return priority(float(self.steerer.fast_scores([observation])[0]))

    def decide(self, observation: Any) -> tuple[bool, float, float]:
        """(slow path runs?, z, p_t) for one observation."""
        with torch.no_grad():
            z = float(self.steerer.fast_scores([observation])[0])
        fire = gate_decision(z, self.tau, self.rng, self.deterministic)
        return fire, z, gate_probability(z, self.tau)

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> int | str:
        fire, z, p = self.decide(observation)
        sample: SlowSample | None = None
        if fire:
            sample = self.steerer.sample_slow(observation, 1, self.generator, greedy=self.greedy_slow)[0]
        self.last = {"z": z, "p": p, "fired": fire, "sample": sample}
        if sample is None:
            return 0 if self.action_mode == "discrete" else "pass"
        return sample.to_action(self.action_mode)
