"""The training signals of the steering agent (the steering training algorithm: agents.steering.config).

* ``q(s) = mean_j |R̄_{s,j} − b_s|``: how much intervening at ``s`` changes the outcome (fast-path target).
* Pairwise ranking loss over pairs of states of the same task (RankNet's logistic loss on ``z_a − z_b``).
* GRPO advantages whose normalisation group contains the no-intervention baseline ``b_s`` next to the ``G``
  intervention returns, so an intervention earns a positive advantage only when it beats the mean over
  interventions *and* no-intervention together.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..grpo import clipped_surrogate, group_advantages, policy_gradient_loss


def intervention_effect(intervention_returns: Sequence[float], baseline: float) -> float:
    """``q(s)``, the fast path's target: the mean absolute difference between each sampled intervention's mean
    return and the baseline ``b_s``, i.e. how much intervening *changes* the outcome."""
    values = np.asarray(intervention_returns, dtype=float)
    if values.size == 0:
        raise ValueError("q(s) needs at least one intervention return")
    return float(np.mean(np.abs(values - float(baseline))))


def grpo_advantages(intervention_returns: Sequence[float], baseline: float, eps: float = 1e-6) -> np.ndarray:
    """Advantages of the ``G`` interventions, normalised over the group ``{R̄_1..R̄_G, b_s}``.

    ``A_j = (R̄_j − μ) / (σ + eps)`` with ``μ``, ``σ`` the mean and (population) standard deviation of the
    ``G + 1`` values. When the whole group ties, every advantage is 0 (nothing to learn from this state).
    """
    return group_advantages(intervention_returns, extra=(float(baseline),), eps=eps)


#: one on-policy GRPO step and the clipped surrogate of later epochs live in :mod:`agents.grpo` (shared with
#: ACTGUIDE-RL); the steering trainer's names are kept
grpo_loss = policy_gradient_loss
grpo_clipped_loss = clipped_surrogate


def same_task_pairs(task_ids: Sequence[str], targets: Sequence[float], min_gap: float = 1e-9) -> list[tuple[int, int]]:
    """Index pairs ``(a, b)`` of states of the same task with ``q_a > q_b`` (ties carry no order, skipped)."""
    by_task: dict[str, list[int]] = {}
    for i, task in enumerate(task_ids):
        by_task.setdefault(task, []).append(i)
    pairs: list[tuple[int, int]] = []
    for members in by_task.values():  # grouped first: linear in the number of tasks, not quadratic in states
        for a in members:
            for b in members:
                if a != b and targets[a] - targets[b] > min_gap:
                    pairs.append((a, b))
    return pairs


def sampled_pairs(
    targets: Sequence[float], max_pairs: int, rng: np.random.Generator, min_gap: float = 1e-9
) -> list[tuple[int, int]]:
    """Up to ``max_pairs`` distinct index pairs ``(a, b)`` of *any* states with ``q_a > q_b``, drawn uniformly.

    Not the paper's pair set (which compares states of the same task only): with it the ranking loss also sees
    how states of different tasks compare, i.e. the level of ``q`` across tasks. Every ordered pair with a gap
    is listed when there are at most ``max_pairs`` of them.
    """
    q = np.asarray(targets, dtype=float)
    n = len(q)
    if n < 2:
        return []
    gap = q[:, None] - q[None, :] > min_gap
    total = int(gap.sum())
    if total <= max_pairs:
        a, b = np.nonzero(gap)
        return list(zip(a.tolist(), b.tolist()))
    flat = np.flatnonzero(gap)
    chosen = np.sort(rng.choice(flat, size=max_pairs, replace=False))
    return [(int(i // n), int(i % n)) for i in chosen]


def ranking_loss(scores: torch.Tensor, pairs: Sequence[tuple[int, int]]) -> torch.Tensor:
    """Mean logistic pairwise loss ``log(1 + exp(−(z_a − z_b)))`` over pairs where ``a`` should rank above ``b``.

    Its gradient raises ``z_a`` and lowers ``z_b``; it is zero-sum over the pair, so only the order is learnt,
    and the absolute level of ``z`` (hence the intervention rate) is left to ``τ`` at deployment.
    """
    if not pairs:
        return scores.sum() * 0.0
    idx = torch.as_tensor(pairs, dtype=torch.long, device=scores.device)
    return F.softplus(-(scores[idx[:, 0]] - scores[idx[:, 1]])).mean()
