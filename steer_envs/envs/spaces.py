"""A text space that admits any unicode string, and the index check of discrete actions.

Gymnasium's :class:`~gymnasium.spaces.Text` only admits characters of its charset (alphanumerics by default), so
real transcripts (punctuation, accents, markup) would fail ``check_env``. :class:`AnyText` keeps Text's sampling
(over its charset, with lengths capped so samples stay cheap) but its ``contains`` accepts every ``str`` up to
``max_length`` characters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Text

from ..errors import InvalidActionError

SAMPLE_CAP = 256


class AnyText(Text):
    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask=None, probability=None) -> str:
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, min(self.max_length, SAMPLE_CAP) + 1))
            mask = (length, None)
        return super().sample(mask=mask, probability=probability)

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object, /) -> bool:
        return (
            isinstance(other, AnyText) and self.min_length == other.min_length and self.max_length == other.max_length
        )


def discrete_index(action: Any, n: int, what: str, valid: str = "") -> int:
    """A discrete action as a plain ``int`` in ``0..n-1`` (0-d arrays and numpy integers accepted), or an
    :class:`InvalidActionError` saying what the index points into (``what``) and, when given, the valid choices."""
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action.item()
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise InvalidActionError(
            f"discrete action must be an integer index into {what} (0..{n - 1}), got {type(action).__name__} {action!r}"
        )
    if not 0 <= int(action) < n:
        where = f"; valid actions: {valid}" if valid else f" 0..{n - 1}"
        raise InvalidActionError(f"discrete action {int(action)} is out of range{where}")
    return int(action)
