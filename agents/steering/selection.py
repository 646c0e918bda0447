"""Which states of the bank a training round spends its rollouts on (the algorithm of :mod:`agents.steering.config`).

Up to ``k`` states are drawn without replacement; at each draw, with probability ``1 − ε_sel`` the remaining
state with the highest fast-path priority is taken, otherwise one uniformly at random among the remaining.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def random_subset(items: Sequence[T], n: int, rng: np.random.Generator) -> list[T]:
    """``n`` of ``items`` drawn without replacement, kept in their original order (task and bank subsets)."""
    return [items[i] for i in sorted(rng.choice(len(items), size=n, replace=False))]


def epsilon_greedy_select(priorities: Sequence[float], k: int, eps_sel: float, rng: np.random.Generator) -> list[int]:
    """Indices of the chosen states, in draw order. Ties in priority go to the lower index (deterministic)."""
    remaining = list(range(len(priorities)))
    values = np.asarray(priorities, dtype=float)
    chosen: list[int] = []
    for _ in range(min(k, len(remaining))):
        if rng.random() < eps_sel:
            pick = remaining[int(rng.integers(len(remaining)))]
        else:
            pick = max(remaining, key=lambda i: (values[i], -i))
        remaining.remove(pick)
        chosen.append(pick)
    return chosen
