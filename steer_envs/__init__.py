"""steer-envs: Gymnasium environments in which supervising and guiding LLM search agents are RL problems.

Importing the package registers the environment ids (``steer_envs/SearchSteering-v0`` and friends) with
Gymnasium; heavy dependencies (torch, transformers, bm25s) are imported only when an env or backend is built.
"""

import os as _os
import sys as _sys

from .envs.registration import register_envs as _register_envs
from .errors import SteerEnvsError
from .ids import (
    ENV_IDS,
    GUIDED_SEARCH_ENV,
    HANDOFF_ENV,
    PLANNING_ENV,
    STEERING_ENV,  # noqa: F401
    VERIFICATION_ENV,
)
from .protocol import EnvProtocol, make_env

_register_envs()

from .vector import ConcurrentVectorEnv, make_concurrent_vec  # noqa: E402  (needs the ids registered)


def _torch_single_threaded_after_fork() -> None:
    """A forked worker (an async ``make_vec`` env, a process pool) must not use the parent's OpenMP thread team:
    once the parent has run a parallel torch op (the note reader, a steerer), the child's first one waits forever
    on that team's barrier. One thread per worker is also what a pool of workers wants."""
    torch = _sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_torch_single_threaded_after_fork)

__version__ = "0.2.0"
__all__ = [
    "ENV_IDS",
    "GUIDED_SEARCH_ENV",
    "HANDOFF_ENV",
    "PLANNING_ENV",
    "STEERING_ENV",
    "VERIFICATION_ENV",
    "ConcurrentVectorEnv",
    "EnvProtocol",
    "SteerEnvsError",
    "__version__",
    "make_concurrent_vec",
    "make_env",
]
