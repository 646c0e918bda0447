"""One rule from an interval to a verdict. Every "reproduces", "beats" or "holds" a table or a page prints comes from
:func:`verdict`, never from a sentence written beside the numbers: the interval decides, and an interval that
contains 0 shows nothing either way, whatever its mean.

The vocabulary is small and fixed (:data:`VERDICTS`): *reproduces* (the 95% interval excludes 0 in the expected
direction), *opposite* (it excludes 0 the other way), *not shown* (it contains 0). For *not shown*,
:func:`tasks_to_tell` says roughly how many tasks an interval of the same spread would need to exclude 0 at the
same mean, so a reader sees whether the question is open or the effect is small."""

from __future__ import annotations

import math

from .stats import Interval

REPRODUCES, OPPOSITE, NOT_SHOWN = "reproduces", "opposite", "not shown"
VERDICTS = (REPRODUCES, OPPOSITE, NOT_SHOWN)


def verdict(interval: Interval, direction: int = 1) -> str:
    """The verdict of ``interval`` for an effect expected in ``direction`` (+1: a gain, -1: a loss)."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 (a gain is expected) or -1 (a loss), got {direction}")
    if interval.low > 0:
        return REPRODUCES if direction > 0 else OPPOSITE
    if interval.high < 0:
        return OPPOSITE if direction > 0 else REPRODUCES
    return NOT_SHOWN


def tasks_to_tell(interval: Interval, n_tasks: int) -> int | None:
    """About how many tasks an interval like this one would need to exclude 0 at the same mean (its half-width
    shrinks as 1/sqrt(n)); None when the mean is 0 (no scale tells) or the interval already excludes 0."""
    if verdict(interval) != NOT_SHOWN or interval.mean == 0 or n_tasks < 1:
        return None
    half = (interval.high - interval.low) / 2
    return math.ceil(n_tasks * (half / abs(interval.mean)) ** 2)


#: how a paired comparison of two rows reads each verdict ("A beats B" where the gain A - B is shown)
PAIRED_WORDS = {REPRODUCES: "beats", OPPOSITE: "loses to", NOT_SHOWN: "does not significantly beat"}
