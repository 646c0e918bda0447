"""GRPO, once, for every trainer in ``agents`` (the steering agent's slow path and ACTGUIDE-RL's learner).

* :func:`group_advantages`: ``A_j = (R_j − μ) / (σ + eps)`` with ``μ``, ``σ`` the mean and population standard
  deviation over the group, which may hold extra members that get no advantage of their own (the steering
  trainer puts the no-intervention baseline ``b_s`` there). A tied group gives all zeros: nothing to learn.
* :func:`policy_gradient_loss`: the first update on fresh samples (ratio 1), ``−mean A · log π``.
* :func:`clipped_surrogate`: PPO/GRPO's clipped objective ``−mean min(ρA, clip(ρ, 1−ε, 1+ε)A)`` with
  ``ρ = exp(log π_θ − log π_old)``. ACTGUIDE-RL's mixed-policy ratio ``r_mix = π_θ(y | unguided) / π_old(y | guided)``
  is this same ratio with the two log-probs taken under different prompts (:func:`mixed_ratio`).
* :func:`shaped_weight`: the public ACTGUIDE-RL implementation's LUFFY option for guided tokens, ``r/(r+γ)``.
* :func:`kl_k3`: the low-variance KL estimator ``exp(r − l) − (r − l) − 1`` (``l = log π_θ``, ``r = log π_ref``) on
  sampled tokens, as GRPO's KL-to-reference term.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def group_advantages(returns: Sequence[float], extra: Sequence[float] = (), eps: float = 1e-6) -> np.ndarray:
    """Advantages of ``returns``, normalised over the group ``returns ∪ extra`` (see the module docstring)."""
    values = np.asarray(returns, dtype=float)
    group = np.append(values, np.asarray(extra, dtype=float))
    mean = group.mean()
    std = group.std()
    if std < eps:
        return np.zeros_like(values)
    return (values - mean) / (std + eps)


def baseline_advantages(returns: Sequence[float], baseline_returns: Sequence[float], eps: float = 1e-6) -> np.ndarray:
    """Advantages of ``returns`` against another group's mean (``baseline_returns``: rollouts of the same state by
    the policy being trained), scaled by the std over both groups; zeros when every reward is the same."""
    values = np.asarray(returns, dtype=float)
    baseline = np.asarray(baseline_returns, dtype=float)
    std = np.append(values, baseline).std()
    if std < eps or baseline.size == 0:
        return np.zeros_like(values)
    return (values - baseline.mean()) / (std + eps)


def policy_gradient_loss(logprobs: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """``−mean_j A_j · log π_θ(a_j | s)``: one on-policy step (its gradient equals the clipped one at ratio 1)."""
    if logprobs.numel() == 0:
        return logprobs.sum() * 0.0
    return -(advantages.to(logprobs) * logprobs).mean()


def clipped_surrogate_terms(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, clip: float = 0.2
) -> torch.Tensor:
    """Per-element ``min(ρA, clip(ρ, 1−ε, 1+ε)A)`` (to be averaged and negated by the caller)."""
    adv = advantages.to(logprobs)
    ratio = torch.exp(logprobs - old_logprobs.detach())
    return torch.min(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)


def clipped_surrogate(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, clip: float = 0.2
) -> torch.Tensor:
    """``−mean_j min(ρ_j A_j, clip(ρ_j, 1−ε, 1+ε) A_j)`` with ``ρ_j = π_θ / π_old``."""
    if logprobs.numel() == 0:
        return logprobs.sum() * 0.0
    return -clipped_surrogate_terms(logprobs, old_logprobs, advantages, clip).mean()


def mixed_ratio(unguided_logprobs: torch.Tensor, guided_old_logprobs: torch.Tensor) -> torch.Tensor:
    """``r_mix = π_θ(y | unguided prompt) / π_old(y | guided prompt)`` per token."""
    return torch.exp(unguided_logprobs - guided_old_logprobs.detach())


def shaped_weight(
    unguided_logprobs: torch.Tensor, guided_old_logprobs: torch.Tensor, gamma: float = 0.1
) -> torch.Tensor:
    """LUFFY's policy shaping of an off-policy token: the advantage is weighted by ``r / (r + γ)`` with
    ``r = r_mix`` (no gradient through the weight) and the ratio itself is left at 1, so nothing is clipped. A token
    the unguided policy finds unlikely (``r → 0``) still teaches (``≈ r/γ``) and a large ratio saturates at 1."""
    with torch.no_grad():
        r = torch.exp((unguided_logprobs - guided_old_logprobs).clamp(-20.0, 20.0))
        return r / (r + gamma)


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token ``KL(π_θ ‖ π_ref)`` estimate on tokens sampled from π: ``exp(r − l) − (r − l) − 1 ≥ 0``."""
    diff = ref_logprobs.detach() - logprobs
    return torch.exp(diff) - diff - 1.0
