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
    """About how many tasks an interval like this one would need to exclude 0 at the same mean (its arm on the
    side of 0 shrinks as 1/sqrt(n); a bootstrap interval need not be symmetric); None when the mean is 0 or not a
    number (no scale tells) or the interval already excludes 0."""
    if n_tasks < 1 or not math.isfinite(interval.mean) or interval.mean == 0 or verdict(interval) != NOT_SHOWN:
        return None
    arm = interval.mean - interval.low if interval.mean > 0 else interval.high - interval.mean
    return max(n_tasks + 1, math.ceil(n_tasks * (arm / abs(interval.mean)) ** 2))


#: how a paired comparison of two rows reads each verdict ("A beats B" where the gain A - B is shown)
PAIRED_WORDS = {REPRODUCES: "beats", OPPOSITE: "loses to", NOT_SHOWN: "does not significantly beat"}
#: how a pairwise table reads each verdict of ``A − B``
PAIRWISE_WORDS = {REPRODUCES: "A better", OPPOSITE: "B better", NOT_SHOWN: "no difference shown (interval contains 0)"}
