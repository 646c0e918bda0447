"""The gate between the fast path and the slow path (the steerer's fast path decides whether the slow path runs).

The fast path gives log-odds ``z``; the steering priority is ``v = σ(z)``. At deployment a threshold ``τ`` is
compared on the log-odds scale: ``p_t = σ(logit(v) − logit(τ)) = σ(z − logit(τ))``, and the slow path runs on a
``Bernoulli(p_t)`` draw. ``τ`` is a pure deployment knob: it shifts the decision boundary without touching θ.
The deterministic variant (``p_t ≥ 0.5``, i.e. ``v ≥ τ``) is for evaluation.
"""

from __future__ import annotations

import math

import numpy as np

from steer_envs.errors import SteerEnvsError


def sigmoid(x: float) -> float:
    """Numerically stable logistic function."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def logit(p: float) -> float:
    """``log(p / (1 − p))``; ``p`` must lie strictly inside (0, 1)."""
    if not 0.0 < p < 1.0:
        raise SteerEnvsError(f"logit needs a probability strictly between 0 and 1, got {p!r}")
    return math.log(p) - math.log1p(-p)


def check_tau(tau: float) -> float:
    if not isinstance(tau, (int, float)) or not 0.0 < float(tau) < 1.0:
        raise SteerEnvsError(f"the gate threshold tau must be a number strictly between 0 and 1, got {tau!r}")
    return float(tau)


def priority(z: float) -> float:
    """Steering priority ``v = σ(z)``."""
    return sigmoid(z)


def gate_probability(z: float, tau: float) -> float:
    """``p_t = σ(logit(v) − logit(τ))`` with ``v = σ(z)``; computed as ``σ(z − logit(τ))`` for stability."""
    return sigmoid(z - logit(check_tau(tau)))


def gate_decision(z: float, tau: float, rng: np.random.Generator | None = None, deterministic: bool = False) -> bool:
    """Whether the slow path runs: ``Bernoulli(p_t)``, or ``p_t ≥ 0.5`` in the deterministic variant."""
    p = gate_probability(z, tau)
    if deterministic:
        return p >= 0.5
    if rng is None:
        raise SteerEnvsError("a stochastic gate needs a random generator (rng=...), or pass deterministic=True")
    return bool(rng.random() < p)
