"""What the search supervision environments share: tasks, the executor, observations, rewards, forking.

The acting agent (steerer, planner, verifier) sees ``O(g, s_t)`` only: the goal, the executor's transcript (the
most recent ``max_transcript_chars`` characters), the turn index and the number of interventions so far. Hidden
simulator state reaches ``info["privileged"]`` only. Subclasses define when the agent decides and what an action
does (:meth:`SearchEnv._apply`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..data.records import Task
from ..data.scoring import get_metric, squad_em
from ..data.tasks import load_task_file, load_tasks
from ..errors import InvalidActionError, SteerEnvsError, unknown_name
from ..executors.base import Executor, ExecutorContext, Intervention
from ..executors.registry import make_executor, parse_spec
from ..meter import count_step
from .catalogue import CATALOGUES, InterventionTemplate
from .spaces import AnyText, discrete_index

ACTION_MODES = ("discrete", "text")
MAX_GOAL_CHARS = 2000
MAX_ACTION_CHARS = 1 << 20  # the action *space* bound; longer strings are accepted too (see _action_text)


@dataclass(frozen=True)
class EnvConfig:
    """Constructor options of every search env (stored so forks and unpickling rebuild the same env)."""

    executor: str = "sim:default"
    benchmarks: tuple[str, ...] | None = None
    split: str = "train"
    task_ids: tuple[str, ...] | None = None
    max_turns: int = 10
    action_mode: str = "discrete"
    intervention_cost: float = 0.0
    metric: str = "f1"
    data_dir: str | None = None
    retriever: str = "bm25s"
    topk: int = 3
    max_transcript_chars: int = 6000
    decision_every: int = 1
    task_file: str | None = None  # a FlashRAG / Search-R1 JSONL task file instead of the shared benchmarks


class SearchEnv(gym.Env):
    """Base class; see the module docstring. ``kind`` names the catalogue in :data:`CATALOGUES`."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}
    kind = "steering"
    pass_words: frozenset[str] = frozenset({"pass", ""})

    # -- documentation read by the env cards (``steer-envs cards``, docs/envs/) ---------------------------------
    reward_doc = ("Terminal: the score of the executor's final answer against the golden answers under `metric` "
                  "(F1 by default; 0 when it never answers). Each intervention adds `-intervention_cost` at the step "
                  "it is made. Every other step gives 0.")
    observation_docs: dict[str, str] = {
        "goal": "the question (first 2,000 characters)",
        "transcript": "the executor's transcript so far in the Search-R1 protocol, the last `max_transcript_chars`",
        "turn": "executor turns taken so far",
        "interventions": "interventions made so far in this episode",
    }
    info_docs: dict[str, str] = {
        "task_id": "the task's id (`benchmark/split_index`)",
        "benchmark": "the task's benchmark",
        "executor_turns": "executor turns taken",
        "interventions": "interventions made",
        "tokens": "tokens the executor generated (words, for simulated and replayed executors)",
        "answer": "the executor's answer (None until it answers)",
        "privileged": "simulator ground truth (drift label, hop progress): for analysis only, never for acting",
        "f1": "token F1 of the answer (final step)",
        "em": "exact match of the answer (final step)",
        "score": "the reward metric's value (final step)",
        "failure": "why the episode ended early: a service that failed after retries, or a recording that ends "
                   "(final step, only when it happened)",
        "failure_source": "what failed (`backend`, `retrieval`, `service`) when a service failed after its retries: "
                          "the episode is then truncated (terminated=False) with reward 0 for that step, a failure "
                          "and not an outcome (final step, only when it happened; `steer_envs.failures`)",
    }
    option_docs: dict[str, str] = {
        "executor": "executor spec: `sim:<profile>`, `hf:<folder>`, `openai:<model>@<url>`, `replay:<file>`, ...",
        "benchmarks": "benchmarks to draw tasks from (default: all seven)",
        "split": "task split: train, dev or test",
        "task_ids": "explicit task ids (default: every task of the benchmarks and split the executor supports)",
        "max_turns": "the executor's turn budget",
        "action_mode": "`discrete` (index into `env.unwrapped.catalogue`) or `text` (a free note, `pass` to pass)",
        "intervention_cost": "reward cost of each intervention",
        "metric": "reward metric: f1, em, cover_em, ...",
        "data_dir": "data folder (default: $STEER_ENVS_DATA, else ../shared/data)",
        "retriever": "retriever spec: `bm25s`, `lucene`, `http:<url>`, or a plugin's kind",
        "topk": "documents per search",
        "max_transcript_chars": "how much of the transcript the observation shows",
        "decision_every": "executor turns between two decisions",
        "render_mode": "`ansi` (render returns the observation as text) or `human` (prints it)",
        "task_file": "a FlashRAG / Search-R1 JSONL task file instead of the shared benchmarks",
    }

    def __init__(
        self,
        executor: str = "sim:default",
        benchmarks=None,
        split: str = "train",
        task_ids=None,
        max_turns: int = 10,
        action_mode: str = "discrete",
        intervention_cost: float = 0.0,
        metric: str = "f1",
        data_dir: str | None = None,
        retriever: str = "bm25s",
        topk: int = 3,
        max_transcript_chars: int = 6000,
        decision_every: int = 1,
        render_mode: str | None = None,
        task_file: str | None = None,
    ) -> None:
        if action_mode not in ACTION_MODES:
            raise unknown_name("action_mode", action_mode, ACTION_MODES)
        if not isinstance(max_turns, int) or max_turns < 1:
            raise SteerEnvsError(f"max_turns must be a positive integer, got {max_turns!r}")
        if not isinstance(decision_every, int) or decision_every < 1:
            raise SteerEnvsError(f"decision_every must be a positive integer, got {decision_every!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise unknown_name("render_mode", render_mode, self.metadata["render_modes"])
        parse_spec(executor)  # fail fast, listing the valid kinds
        get_metric(metric)  # fail fast on an unknown metric name
        if isinstance(benchmarks, str):
            benchmarks = (benchmarks,)
        self.config = EnvConfig(
            executor, tuple(benchmarks) if benchmarks else None, split, tuple(task_ids) if task_ids else None,
            max_turns, action_mode, float(intervention_cost), metric, data_dir, retriever, topk,
            max_transcript_chars, decision_every, str(task_file) if task_file else None,
        )
        self.render_mode = render_mode
        self._tasks: list[Task] | None = None
        self.executor: Executor = self._make_executor(
            executor, ExecutorContext(retriever=retriever, data_dir=data_dir, max_turns=max_turns, topk=topk)
        )
        if not self.tasks:
            hint = (f"; {executor} supports none of the {self._unsupported} that do (a replay covers only recorded "
                    "tasks)") if self._unsupported else ""
            raise SteerEnvsError(f"no tasks match benchmarks={benchmarks!r} split={split!r} task_ids={task_ids!r}"
                                 + hint)
        self.catalogue: tuple[InterventionTemplate, ...] = CATALOGUES[self.kind]
        self.observation_space = self._observation_space()
        self.action_space = (
            spaces.Discrete(len(self.catalogue)) if action_mode == "discrete" else AnyText(MAX_ACTION_CHARS)
        )
        self.task: Task | None = None
        self.interventions = 0
        self._decisions = 0
        self._failure_reported = False

    @property
    def metric_fn(self):
        """Looked up by name (metric functions are closures, which cannot be pickled)."""
        return get_metric(self.config.metric)

    # -- tasks (reloaded after unpickling instead of being copied) -------------------------------------------
    @property
    def tasks(self) -> list[Task]:
        """The tasks ``reset`` draws from. Without explicit ``task_ids``, only those the executor supports (a
        ``replay:`` env picks recorded tasks by default)."""
        if self._tasks is None:
            c = self.config
            if c.task_file:
                tasks = load_task_file(c.task_file, split=c.split)
                wanted = set(c.task_ids or ())
                tasks = [t for t in tasks if not wanted or t.id in wanted]
            else:
                tasks = load_tasks(c.benchmarks, c.split, c.data_dir, ids=c.task_ids)
            self._tasks = tasks if c.task_ids else [t for t in tasks if self.executor.supports_task(t)]
            self._unsupported = len(tasks) - len(self._tasks)
        return self._tasks

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_tasks"] = None
        return state

    # -- spaces and observations --------------------------------------------------------------------------------
    @property
    def max_interventions(self) -> int:
        return 2 * self.config.max_turns + 2

    def _observation_space(self) -> spaces.Dict:
        return spaces.Dict({
            "goal": AnyText(MAX_GOAL_CHARS),
            "transcript": AnyText(self.config.max_transcript_chars),
            "turn": spaces.Discrete(self.config.max_turns + 1),
            "interventions": spaces.Discrete(self.max_interventions + 1),
        })

    def _observation(self) -> dict[str, Any]:
        ex = self.executor
        return {
            "goal": self.task.question[:MAX_GOAL_CHARS],
            "transcript": ex.transcript[-self.config.max_transcript_chars:],
            "turn": np.int64(min(ex.stats.turns, self.config.max_turns)),
            "interventions": np.int64(min(self.interventions, self.max_interventions)),
        }

    def _info(self, final: bool) -> dict[str, Any]:
        ex, task = self.executor, self.task
        info: dict[str, Any] = {
            "task_id": task.id,
            "benchmark": task.benchmark,
            "executor_turns": ex.stats.turns,
            "interventions": self.interventions,
            "tokens": ex.stats.tokens,
            "answer": ex.answer,
            "privileged": ex.privileged(),
        }
        if final:
            info["f1"] = get_metric("f1")(ex.answer, task.golden_answers)
            info["em"] = squad_em(ex.answer, task.golden_answers)
            info["score"] = self.metric_fn(ex.answer, task.golden_answers)
            if ex.failure:
                info["failure"] = ex.failure
            if getattr(ex, "failure_source", None) is not None:
                info["failure_source"] = ex.failure_source
        return info

    # -- gymnasium API ---------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        task_id = options.get("task_id")
        if task_id is not None:
            matches = [t for t in self.tasks if t.id == task_id]
            if not matches:
                raise SteerEnvsError(
                    f"task_id {task_id!r} is not among this env's {len(self.tasks)} tasks "
                    f"(benchmarks={self.config.benchmarks}, split={self.config.split!r})"
                )
            self.task = matches[0]
        else:
            self.task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        executor_seed = int(self.np_random.integers(2**31 - 1))
        self.executor.reset(self.task, seed=executor_seed)
        self.interventions = 0
        self._decisions = 0
        self._failure_reported = False
        self._after_reset()
        return self._observation(), self._info(final=False)

    def step(self, action):
        if self.task is None:
            raise SteerEnvsError("call reset() before step()")
        if self._finished() and not self._failure_pending():
            raise SteerEnvsError("the episode has ended; call reset() to start another")
        template, text = self._decode(action)
        self._decisions += 1
        count_step()  # the budget meter (steer_envs.meter): forks and pool workers count too
        if self._failure_pending():  # a service failed before this decision (during reset): nothing to act on
            return self._truncate()
        reward = self._apply(template, text)
        if self._failure_pending():
            return self._truncate()
        terminated = self._finished()
        if terminated:
            reward += self.metric_fn(self.executor.answer, self.task.golden_answers)
        return self._observation(), float(reward), terminated, False, self._info(final=terminated)

    def _failure_pending(self) -> bool:
        """A service failed after its retries and the episode has not reported it yet."""
        return getattr(self.executor, "failure_source", None) is not None and not self._failure_reported

    def _truncate(self):
        """Failures are not rewards (``steer_envs.failures``): the episode ends as truncated, reward 0 for the step,
        the reason in ``info["failure"]`` and ``info["failure_source"]``."""
        self._failure_reported = True
        return self._observation(), 0.0, False, True, self._info(final=True)

    def render(self):
        if self.render_mode is None or self.task is None:
            return None
        from . import observation_text

        text = observation_text(self._observation())
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # -- actions ---------------------------------------------------------------------------------------------------
    def _decode(self, action) -> tuple[InterventionTemplate | None, str | None]:
        """(template, note text); (None, None) passes. Discrete templates are filled from the observation."""
        if self.config.action_mode == "discrete":
            names = ", ".join(f"{i}={t.name}" for i, t in enumerate(self.catalogue))
            template = self.catalogue[discrete_index(action, len(self.catalogue), "env.unwrapped.catalogue", names)]
            if template.kind == "pass":
                return None, None
            obs = self._observation()
            return template, template.fill(obs["goal"], self.executor.transcript)
        if not isinstance(action, str):
            raise InvalidActionError(
                f"text action must be a str (a note, or 'pass'), got {type(action).__name__}; "
                f"use action_mode='discrete' for integer actions"
            )
        if action.strip().lower() in self.pass_words:
            return None, None
        return None, action

    def _intervene(self, kind: str, text: str) -> float:
        self.executor.intervene(Intervention(kind, text))  # type: ignore[arg-type]
        self.interventions += 1
        return -self.config.intervention_cost if self.config.intervention_cost else 0.0  # never -0.0

    def _run_turns(self, n: int | None) -> None:
        count = 0
        while not self.executor.done and (n is None or count < n):
            self.executor.step()
            count += 1

    # -- for subclasses --------------------------------------------------------------------------------------------
    def _make_executor(self, spec: str, context: ExecutorContext) -> Executor:
        """The supervised system (an executor by spec; the hand-off env builds its pipeline here)."""
        return make_executor(spec, context)

    def _after_reset(self) -> None:
        """Advance the executor to the first decision point."""

    def _apply(self, template: InterventionTemplate | None, text: str | None) -> float:
        raise NotImplementedError

    def _finished(self) -> bool:
        return self.executor.done

    # -- forking (GEM-style get_state / set_state) -------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """A picklable snapshot of the episode (executor state, counters, the env's RNG)."""
        return {
            "task": self.task,
            "interventions": self.interventions,
            "decisions": self._decisions,
            "executor": self.executor.get_state(),
            "np_random": copy.deepcopy(self.np_random),
            "failure_reported": self._failure_reported,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.task = state["task"]
        self.interventions = state["interventions"]
        self._decisions = state["decisions"]
        self.executor.set_state(state["executor"])
        self._np_random = copy.deepcopy(state["np_random"])
        self._failure_reported = state.get("failure_reported", False)

    def fork(self, seed: int | None = None) -> "SearchEnv":
        """An independent env continuing from this exact state. With ``seed``, the executor's (and the env's)
        future randomness is re-seeded, so N forks with N seeds give N independent continuations."""
        clone = copy.copy(self)
        clone.executor = self.executor.fork()
        clone._np_random = copy.deepcopy(self.np_random)
        if seed is not None:
            reseed = getattr(clone.executor, "reseed", None)
            if reseed is not None:
                reseed(seed)
            clone._np_random = np.random.default_rng(seed)
        return clone
