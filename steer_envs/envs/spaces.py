"""A text space that admits any unicode string.

Gymnasium's :class:`~gymnasium.spaces.Text` only admits characters of its charset (alphanumerics by default), so
real transcripts (punctuation, accents, markup) would fail ``check_env``. :class:`AnyText` keeps Text's sampling
(over its charset, with lengths capped so samples stay cheap) but its ``contains`` accepts every ``str`` up to
``max_length`` characters.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Text

SAMPLE_CAP = 256


class AnyText(Text):
    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask=None, probability=None) -> str:  # type: ignore[override]
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, min(self.max_length, SAMPLE_CAP) + 1))
            mask = (length, None)
        return super().sample(mask=mask, probability=probability)

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object, /) -> bool:
        return isinstance(other, AnyText) and self.min_length == other.min_length and self.max_length == other.max_length
