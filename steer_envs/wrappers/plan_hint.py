"""ReferencePlanHint: give each GuidedSearch-v0 episode the first ``k`` actions of its ACTGUIDE reference plan, for
any learner (Stable-Baselines3 included); the plans themselves are :mod:`steer_envs.reference_plans`.

The env takes ``plan_k`` / ``plan_mode`` per episode through ``reset(options=...)``; most training libraries call
``reset()`` without options, so this wrapper decides the plan shown in every episode itself:

* ``k``: an int (the first ``k`` reference actions), ``"full"`` (the whole reference), or a callable
  ``k(task_id, reference_length, episode_index) -> int`` (a schedule, e.g. a plan that shrinks over training);
* ``p``: the probability that an episode is guided at all (a mix of guided and unguided episodes);
* ``mode``: ``"prompt"`` (hint in the prompt) or ``"prefix"`` (reference searches executed first).

The draw of ``p`` uses the wrapper's own generator seeded at the first ``reset(seed=...)``, so runs repeat.
``info["plan_k"]`` says what each episode got; ``info["unguided_observation"]`` comes from the env.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import gymnasium as gym
import numpy as np

from ..errors import SteerEnvsError

KSchedule = Callable[[str, int, int], int]


class _ReferencePlanEnv(Protocol):
    """What the wrapper uses of the env it wraps (GuidedSearch-v0; ``__init__`` checks for ``reference_for``)."""

    #: the episode under way (``state.task`` is its task)
    state: Any

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any: ...

    def reference_for(self, task_id: str) -> Any: ...


class ReferencePlanHint(gym.Wrapper):
    def __init__(
        self, env: gym.Env, k: int | str | KSchedule = "full", p: float = 1.0, mode: str | None = None
    ) -> None:
        super().__init__(env)
        base = env.unwrapped
        if not hasattr(base, "reference_for") or not hasattr(base, "tasks"):
            raise SteerEnvsError(
                f"{type(self).__name__} wraps steer_envs/GuidedSearch-v0 (an env with reference action sequences), got "
                f"{type(base).__name__}"
            )
        if not (callable(k) or k == "full" or (isinstance(k, int) and not isinstance(k, bool) and k >= 0)):
            raise SteerEnvsError(
                f"k must be an int >= 0, 'full', or a callable (task_id, length, episode) -> int; got {k!r}"
            )
        if not 0.0 <= p <= 1.0:
            raise SteerEnvsError(f"p (probability of guiding an episode) must be in [0, 1], got {p!r}")
        if mode is not None and mode not in ("prompt", "prefix"):
            raise SteerEnvsError(f"mode must be 'prompt' or 'prefix', got {mode!r}")
        self.k, self.p, self.mode = k, float(p), mode
        self.episodes = 0
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._rng = np.random.default_rng([seed, 0x6A1D])
        options = dict(options or {})
        base = cast(_ReferencePlanEnv, self.env.unwrapped)
        if "task_id" not in options:  # choose the task here so its reference length is known before the reset
            base.reset(seed=seed, options={"plan_k": 0})
            seed = None
            options["task_id"] = base.state.task.id
        if "plan_k" not in options:
            reference = base.reference_for(options["task_id"])
            length = len(reference) if reference is not None else 0
            guided = self._rng.random() < self.p
            options["plan_k"] = self._k(options["task_id"], length) if guided else 0
        if self.mode is not None:
            options.setdefault("plan_mode", self.mode)
        self.episodes += 1
        return self.env.reset(seed=seed, options=options)

    def _k(self, task_id: str, length: int) -> int:
        if self.k == "full":
            return length
        if callable(self.k):
            value = self.k(task_id, length, self.episodes)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise SteerEnvsError(f"the plan schedule returned {value!r}; it must return an int >= 0")
            return int(value)
        return int(self.k)
