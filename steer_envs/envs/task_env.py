"""The base of every search-task env: what an episode over a benchmark question needs, written once.

:class:`SearchTaskEnv` owns the parts the supervision envs (:class:`~steer_envs.envs.base.SearchEnv`: steering,
planning, verification, hand-off) and the learner env (:class:`~steer_envs.envs.guided.GuidedSearchEnv`) share:

* **options** checked the same way (:meth:`_check_common_options`: action mode, turn budget, render mode, metric);
* **tasks** loaded on first use and reloaded after unpickling instead of being copied (:attr:`tasks`,
  :meth:`_load_tasks`), one way to pick an episode's task (``options["task_id"]`` or the env's RNG);
* **reset**: the task draw, then one episode seed from the env's RNG, in that order (so a subclass's episodes are
  a function of the seed), then :meth:`_begin`;
* **scoring**: the answer's F1, exact match and the reward metric (:meth:`_scores`), failures as truncations
  (:meth:`_truncate`, ``steer_envs.failures``), and an agent that outgrew its model's context as a *scored*
  truncation (:meth:`_truncate_context`: no answer, F1 0, ``info["truncation"] = "context"``, kept in means);
* **render**: ``ansi`` returns the text, ``human`` prints it, on every ``reset`` and ``step`` as Gymnasium expects;
* **forking** (GEM-style ``get_state`` / ``set_state`` / ``fork``): the env's RNG travels with its seed
  (``_np_random_seed``), so ``env.np_random_seed`` stays true after a fork or a restored state;
* **close**: releases the env's backends (its executor's model client, its retriever reference) once; a fork
  shares its parent's backends and leaves them to the parent;
* **determinism**: :attr:`deterministic` says whether the same seed gives the same episode (False for an
  LLM-backed executor); ``env.spec.nondeterministic`` reports it (ids are registered per env, not per executor, so
  the spec a ``gymnasium.make`` attaches is corrected here).

Subclasses implement the episode itself: :meth:`_load_tasks`, :meth:`_begin`, :meth:`_step`, :meth:`_observation`,
:meth:`_info`, :meth:`_render_text` and the state hooks.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Literal, Protocol, TypeVar, get_args

import gymnasium as gym
import numpy as np

from ..data.records import Task
from ..data.scoring import get_metric, squad_em
from ..errors import SteerEnvsError, unknown_name


class TaskOptions(Protocol):
    """What the task-sampling base reads of an env's options (every env's config dataclass has these fields);
    a protocol, so this module needs nothing from the modules that define the configs."""

    @property
    def metric(self) -> str: ...

    @property
    def benchmarks(self) -> tuple[str, ...] | None: ...

    @property
    def split(self) -> str: ...


#: how an env takes its actions: an index into its catalogue, or text
ActionMode = Literal["discrete", "text"]
ACTION_MODES: tuple[str, ...] = get_args(ActionMode)
#: the range episode seeds are drawn from (the env's RNG gives one per reset)
EPISODE_SEED_BOUND = 2**31 - 1
_Env = TypeVar("_Env", bound="SearchTaskEnv")


class SearchTaskEnv(gym.Env):
    """Base class; see the module docstring."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}
    #: attributes dropped when pickled and rebuilt on first use (tasks, caches; subclasses extend)
    _transient: tuple[str, ...] = ("_tasks",)
    _tasks: list[Task] | None = None
    _closed: bool = False
    #: False for forks: they share their parent's backends, which the parent releases
    _owns_backends: bool = True
    #: the env's options (each subclass narrows it to its own config class)
    config: TaskOptions

    # -- options ---------------------------------------------------------------------------------------------
    def _check_common_options(self, action_mode: str, max_turns: Any, render_mode: str | None, metric: str) -> None:
        """The checks every search-task env makes on its shared options, each error saying what is valid."""
        if action_mode not in ACTION_MODES:
            raise unknown_name("action_mode", action_mode, ACTION_MODES)
        if not isinstance(max_turns, int) or max_turns < 1:
            raise SteerEnvsError(f"max_turns must be a positive integer, got {max_turns!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise unknown_name("render_mode", render_mode, self.metadata["render_modes"])
        get_metric(metric)  # fail fast on an unknown metric name

    @property
    def metric_fn(self):
        """Looked up by name (metric functions are closures, which cannot be pickled)."""
        return get_metric(self.config.metric)

    # -- tasks (reloaded after unpickling instead of being copied) ---------------------------------------------
    @property
    def tasks(self) -> list[Task]:
        """The tasks ``reset`` draws from (loaded on first use)."""
        if self._tasks is None:
            self._tasks = self._load_tasks()
        return self._tasks

    def _load_tasks(self) -> list[Task]:
        raise NotImplementedError

    def _task_hint(self) -> str:
        """Appended to the unknown-``task_id`` error (which tasks this env keeps)."""
        return ""

    def _pick_task(self, task_id: str | None) -> Task:
        """``task_id``'s task, or one drawn with the env's RNG."""
        if task_id is None:
            return self.tasks[int(self.np_random.integers(len(self.tasks)))]
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise SteerEnvsError(
            f"task_id {task_id!r} is not among this env's {len(self.tasks)} tasks "
            f"(benchmarks={self.config.benchmarks}, split={self.config.split!r}{self._task_hint()})"
        )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in self._transient:
            state[name] = None
        return state

    # -- gymnasium API ---------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Options: ``task_id`` (else a task drawn with the env's RNG), and the subclass's own."""
        super().reset(seed=seed)
        options = dict(options or {})
        task = self._pick_task(options.get("task_id"))
        self._begin(task, int(self.np_random.integers(EPISODE_SEED_BOUND)), options)
        result = self._observation(), self._info(final=False)
        self._render_human()
        return result

    def step(self, action):
        result = self._step(action)
        self._render_human()
        return result

    def _truncate(self):
        """Failures are not rewards (``steer_envs.failures``): the episode ends as truncated, reward 0 for the step,
        the reason in ``info["failure"]`` and ``info["failure_source"]``."""
        self._report_failure()
        return self._observation(), 0.0, False, True, self._info(final=True)

    def _truncate_context(self, reward: float = 0.0):
        """The agent outgrew its model's context (``steer_envs.failures``): the episode ends as truncated, scored as
        one without an answer. ``reward`` is what the step earned before (intervention costs); the no-answer score
        is added, so the return is what a harness records, and ``info`` carries ``truncation`` and the final
        scores but no ``failure``, so every mean keeps the episode."""
        self._report_failure()
        reward = float(reward) + float(self._no_answer_score())
        return self._observation(), reward, False, True, self._info(final=True)

    def _no_answer_score(self) -> float:
        """The reward metric of an episode that ends without an answer (0 for every metric the suite ships)."""
        raise NotImplementedError

    def _scores(self, answer: str | None, golden) -> dict[str, Any]:
        """The final step's scores of ``answer``: token F1, exact match, and the reward metric."""
        return {
            "f1": get_metric("f1")(answer, golden),
            "em": squad_em(answer, golden),
            "score": self.metric_fn(answer, golden),
        }

    def render(self):
        """``ansi``: the current view as text; ``human``: printed (also on every reset and step); else None."""
        if self.render_mode is None or not self._has_episode():
            return None
        text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _render_human(self) -> None:
        if self.render_mode == "human":
            self.render()

    # -- determinism and the spec ------------------------------------------------------------------------------
    @property
    def deterministic(self) -> bool:
        """Whether the same seed and actions give the same episode (subclasses: False when a model is sampled)."""
        return True

    @property
    def spec(self):
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, value) -> None:
        """``gymnasium.make`` attaches the registered spec; an LLM-backed env marks it nondeterministic."""
        if value is not None and not self.deterministic and not value.nondeterministic:
            value = dataclasses.replace(value, nondeterministic=True)
        self.__dict__["_spec"] = value

    # -- forking (GEM-style get_state / set_state) -------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """A picklable snapshot of the episode and the env's RNG (with its seed)."""
        state = self._episode_state()
        state["np_random"] = copy.deepcopy(self.np_random)
        state["np_random_seed"] = self._np_random_seed
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        self._restore_episode(state)
        self._np_random = copy.deepcopy(state["np_random"])
        # a state from before the seed was recorded: -1, gymnasium's "set from a generator, seed unknown"
        self._np_random_seed = state.get("np_random_seed", -1)

    def fork(self, seed: int | None = None):
        """An independent env continuing from this exact state. With ``seed``, the env's (and, where it has one,
        the executor's) future randomness is re-seeded, so N forks with N seeds give N independent continuations."""
        clone = copy.copy(self)
        rng = copy.deepcopy(self.np_random)
        self._fork_episode(clone, seed)
        clone._np_random = np.random.default_rng(seed) if seed is not None else rng
        clone._np_random_seed = seed if seed is not None else self._np_random_seed
        clone._owns_backends = False
        clone._closed = False
        return clone

    # -- close -------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the backends (idempotent). A fork leaves its parent's shared backends open."""
        if self._closed:
            return
        self._closed = True
        if self._owns_backends:
            self._release_backends()
        super().close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- for subclasses ----------------------------------------------------------------------------------------
    def _begin(self, task: Task, episode_seed: int, options: dict[str, Any]) -> None:
        """Start an episode of ``task``; ``episode_seed`` fixes its randomness."""
        raise NotImplementedError

    def _step(self, action):
        raise NotImplementedError

    def _has_episode(self) -> bool:
        raise NotImplementedError

    def _observation(self) -> dict[str, Any]:
        raise NotImplementedError

    def _info(self, final: bool) -> dict[str, Any]:
        raise NotImplementedError

    def _render_text(self) -> str:
        raise NotImplementedError

    def _report_failure(self) -> None:
        """Mark the pending early end (a service failure, or a context truncation) as reported (the truncating
        step)."""
        raise NotImplementedError

    def _episode_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _restore_episode(self, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def _fork_episode(self: _Env, clone: _Env, seed: int | None) -> None:
        """Give ``clone`` its own copy of the episode (``clone`` is a shallow copy of this env)."""
        raise NotImplementedError

    def _release_backends(self) -> None:
        """Release what the env holds (executor, retriever, clients)."""


__all__ = ["ACTION_MODES", "EPISODE_SEED_BOUND", "ActionMode", "SearchTaskEnv"]
