"""The env-step meter: how many ``step()`` calls this process (and the rollout-pool workers it used) made.

Why: a learned method's *budget* is the environment work it consumed, counterfactual continuations included, and
comparisons between methods (online RL, filtered behaviour cloning, SB3 PPO) are only fair at equal budgets. A
trainer need not count its own steps: every search env counts each ``step()`` here (forks included), and the
rollout pools add what their worker processes / actors counted while running an item, so
``env_steps()`` after minus before a piece of work is its cost whatever pool ran it.
"""

from __future__ import annotations

import threading

_STEPS = [0]
#: envs step in several threads at once (the concurrent vector env, the thread rollout pool); ``+=`` on a shared
#: counter is not atomic, so without the lock a step could be lost
_LOCK = threading.Lock()


def count_step(n: int = 1) -> None:
    """Called by the envs on every ``step()``."""
    with _LOCK:
        _STEPS[0] += n


def add_env_steps(n: int) -> None:
    """Add steps counted elsewhere (a worker process or Ray actor, reported with its item's result)."""
    with _LOCK:
        _STEPS[0] += int(n)


def env_steps() -> int:
    """Steps counted in this process so far, plus those its pools' workers reported."""
    return _STEPS[0]
