"""Time bounds in tests that do not flip with the machine's load.

A wall-clock bound on in-process work (parse a megabyte, score it) measures how busy the machine is as much as the
code: on a 2-core machine shared with other jobs the same work takes three times as long. These bounds read the
process's CPU time instead, which another process on the machine does not inflate, and each states its margin: the
bound is at least :data:`MIN_MARGIN` times the CPU time the work takes on the reference 2-core machine. What such a
bound catches is a change of complexity (a regex that backtracks for minutes), never a slow day.

Bounds on waiting (a client that gives up after its timeouts) stay on wall time, with the same stated margin over
what the waiting adds up to."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: a bound is at least this many times the measured typical time
MIN_MARGIN = 10.0


def _check_margin(bound_s: float, typical_s: float) -> None:
    if bound_s < MIN_MARGIN * typical_s:
        raise ValueError(f"a time bound of {bound_s} s is under {MIN_MARGIN:g} x the typical {typical_s} s: widen it")


@contextmanager
def cpu_seconds_under(bound_s: float, typical_s: float) -> Iterator[None]:
    """Assert that the block uses less than ``bound_s`` seconds of this process's CPU time (``typical_s``: what it
    uses on the reference machine, so the margin is written beside the bound)."""
    _check_margin(bound_s, typical_s)
    start = time.process_time()
    yield
    used = time.process_time() - start
    assert used < bound_s, f"took {used:.2f} s of CPU, bound {bound_s} s (typical {typical_s} s)"


@contextmanager
def wall_seconds_under(bound_s: float, typical_s: float) -> Iterator[None]:
    """Assert that the block (mostly waiting: timeouts, retries, sleeps) ends within ``bound_s`` seconds of wall
    time; ``typical_s`` is what the waiting adds up to, so the margin is written beside the bound."""
    _check_margin(bound_s, typical_s)
    start = time.monotonic()
    yield
    used = time.monotonic() - start
    assert used < bound_s, f"took {used:.2f} s, bound {bound_s} s (typical {typical_s} s)"


def wait_until(
    condition: Callable[[], object], bound_s: float, typical_s: float, what: str, poll_s: float = 0.05
) -> float:
    """Poll ``condition`` until it returns something true, for at most ``bound_s`` seconds of wall time; returns the
    seconds waited. For readiness (a server that starts in the test, a run reaching a checkpoint): ``typical_s`` is
    how long it takes on the quiet reference machine, and the bound's margin over it covers a machine that other
    jobs keep busy. ``condition`` may raise to fail at once (the process it waits for exited)."""
    _check_margin(bound_s, typical_s)
    start = time.monotonic()
    while not condition():
        waited = time.monotonic() - start
        if waited > bound_s:
            raise AssertionError(f"{what}: not within {bound_s} s (typical {typical_s} s)")
        time.sleep(poll_s)
    return time.monotonic() - start
