"""What the search supervision environments share: tasks, the executor, observations, rewards, forking.

The acting agent (steerer, planner, verifier) sees ``O(g, s_t)`` only: the goal, the executor's transcript (the
most recent ``max_transcript_chars`` characters), the turn index and the number of interventions so far. Hidden
simulator state reaches ``info["privileged"]`` only. Subclasses define when the agent decides and what an action
does (:meth:`SearchEnv._apply`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import numpy as np
from gymnasium import spaces

from ..data.records import Task
from ..data.scoring import get_metric
from ..data.tasks import load_task_file, load_tasks
from ..errors import InvalidActionError, SteerEnvsError, unknown_name
from ..executors.base import Executor, ExecutorContext, Intervention
from ..executors.registry import make_executor, parse_spec
from ..failures import CONTEXT_TRUNCATION
from ..meter import count_step
from .catalogue import CATALOGUES, InterventionTemplate
from .spaces import AnyText, discrete_index
from .task_env import ACTION_MODES, SearchTaskEnv

MAX_GOAL_CHARS = 2000
MAX_ACTION_CHARS = 1 << 20  # the action *space* bound; longer strings are accepted too (see _action_text)
_Config = TypeVar("_Config", bound="SearchTaskConfig")


def option(default: Any, doc: str, **kwargs: Any) -> Any:
    """A dataclass field that is an env option: ``doc`` (its meaning, shown by the env cards and ``option_docs``)
    lives in the field's metadata, so the option list, its defaults and its documentation are written once."""
    return field(default=default, metadata={"doc": doc}, **kwargs)


class UnknownOptionError(SteerEnvsError, TypeError):
    """``gymnasium.make(id, <keyword>=...)`` with a keyword the env has no option for (a ``TypeError`` too, as an
    unexpected keyword argument is in Python)."""


@dataclass(frozen=True)
class SearchTaskConfig:
    """The options every search-task env shares (the supervision envs' :class:`EnvConfig` and GuidedSearch-v0's
    :class:`~.guided.GuidedSearchConfig` extend it): where the tasks come from, how the agent searches, its turn
    budget, action mode, reward metric and render mode, each defined once with its doc. A subclass adds only its own
    options; where its default differs it redeclares the field with :meth:`redefault` (the doc stays this one), and
    where an option *means* something else there (``action_mode``: what an index selects) it redeclares the field
    with its own doc, as a dataclass subclass may (the field keeps its place in the list)."""

    benchmarks: tuple[str, ...] | None = option(None, "benchmarks to draw tasks from (default: all seven)")
    split: str = option("train", "task split: train, dev or test")
    task_ids: tuple[str, ...] | None = option(
        None, "explicit task ids (default: every task of the benchmarks and split that this env can run)"
    )
    max_turns: int = option(
        10, "the searching agent's turn budget (the executor's in the supervision envs, the learner's in GuidedSearch)"
    )
    action_mode: str = option("discrete", "`discrete` (an index into the env's action set) or `text` (a string)")
    metric: str = option("f1", "reward metric: f1, em, cover_em, ...")
    data_dir: str | None = option(None, "data folder (default: $STEER_ENVS_DATA, else ../shared/data)")
    retriever: str = option("bm25s", "retriever spec: `bm25s`, `lucene`, `http:<url>`, or a plugin's kind")
    topk: int = option(3, "documents per search")
    render_mode: str | None = option(None, "`ansi` (render returns the observation as text) or `human` (prints it)")

    def __post_init__(self) -> None:
        """Normalise what callers pass loosely (a benchmark name, lists) and fail fast on bad values."""
        benchmarks, task_ids = self.benchmarks, self.task_ids
        if isinstance(benchmarks, str):
            benchmarks = (benchmarks,)
        if isinstance(task_ids, str):
            task_ids = (task_ids,)
        object.__setattr__(self, "benchmarks", tuple(benchmarks) if benchmarks else None)
        object.__setattr__(self, "task_ids", tuple(task_ids) if task_ids else None)
        if self.action_mode not in ACTION_MODES:
            raise unknown_name("action_mode", self.action_mode, ACTION_MODES)
        if not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise SteerEnvsError(f"max_turns must be a positive integer, got {self.max_turns!r}")

    @classmethod
    def redefault(cls, name: str, default: Any) -> Any:
        """``name``'s field of this class with another default and the same doc (for a subclass's body)."""
        return option(default, cls.__dataclass_fields__[name].metadata["doc"])

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def option_docs(cls) -> dict[str, str]:
        """option -> its documentation (from the fields' metadata)."""
        return {f.name: f.metadata.get("doc", "") for f in fields(cls)}

    @classmethod
    def from_options(cls: type[_Config], env_name: str = "this env", **options: Any) -> _Config:
        """The config of ``gymnasium.make(id, **options)``; an unknown keyword is an error naming the valid ones."""
        unknown = sorted(set(options) - set(cls.option_names()))
        if unknown:
            close = {name: difflib.get_close_matches(name, cls.option_names(), n=1) for name in unknown}
            hints = "".join(f" ({name!r}: did you mean {match[0]!r}?)" for name, match in close.items() if match)
            raise UnknownOptionError(
                f"{env_name} has no option {', '.join(map(repr, unknown))}{hints}; its options: "
                f"{', '.join(cls.option_names())} (documented in docs/envs/ and `env.unwrapped.option_docs`)"
            )
        return cls(**options)


@dataclass(frozen=True)
class EnvConfig(SearchTaskConfig):
    """Constructor options of every search supervision env: :class:`SearchTaskConfig`'s and the executor's (their
    defaults, types and docs; the env cards, ``option_docs`` and the constructors read it). Stored on the env so
    forks and unpickling rebuild the same env. An env with other options subclasses it
    (:class:`~.handoff.HandoffEnvConfig`)."""

    action_mode: str = option(
        "discrete", "`discrete` (index into `env.unwrapped.catalogue`) or `text` (a free note, `pass` to pass)"
    )
    executor: str = option(
        "sim:default", "executor spec: `sim:<profile>`, `hf:<folder>`, `openai:<model>@<url>`, `replay:<file>`, ..."
    )
    intervention_cost: float = option(0.0, "reward cost of each intervention")
    max_transcript_chars: int = option(6000, "how much of the transcript the observation shows")
    decision_every: int = option(1, "executor turns between two decisions")
    task_file: str | None = option(None, "a FlashRAG / Search-R1 JSONL task file instead of the shared benchmarks")

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "intervention_cost", float(self.intervention_cost))
        object.__setattr__(self, "task_file", str(self.task_file) if self.task_file else None)
        if not isinstance(self.decision_every, int) or self.decision_every < 1:
            raise SteerEnvsError(f"decision_every must be a positive integer, got {self.decision_every!r}")


#: the longest free-text note an ``info["action"]`` (and an episode record) keeps
ACTION_LABEL_CHARS = 120


def action_label(template: InterventionTemplate | None, text: str | None) -> str:
    """What one decision did, compactly, for ``info["action"]`` and the episode records: ``"pass"``, the note's
    catalogue name (discrete actions), or ``"note: <text>"`` for a free-text note (whitespace folded, cut to
    :data:`ACTION_LABEL_CHARS`). Why: counts of interventions cannot show that a learner collapsed to one note."""
    if template is not None:
        return template.name
    if text is None:
        return "pass"
    return "note: " + " ".join(text.split())[:ACTION_LABEL_CHARS]


class SearchEnv(SearchTaskEnv):
    """Base class of the supervision envs; see the module docstring. ``kind`` names the catalogue in
    :data:`CATALOGUES`. What every search-task env shares (tasks, reset, scoring, render, forking, close) lives in
    :class:`~steer_envs.envs.task_env.SearchTaskEnv`."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}
    kind = "steering"
    pass_words: frozenset[str] = frozenset({"pass", ""})

    # -- documentation read by the env cards (``steer-envs cards``, docs/envs/) ---------------------------------
    reward_doc = (
        "Terminal: the score of the executor's final answer against the golden answers under `metric` "
        "(F1 by default; 0 when it never answers). Each intervention adds `-intervention_cost` at the step "
        "it is made. Every other step gives 0."
    )
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
        "action": "what this step did: `pass`, the note's catalogue name, or `note: <text>` for a free-text note "
        "(whitespace folded, first 120 characters); episode records keep one per decision (every step after reset)",
        "f1": "token F1 of the answer (final step)",
        "em": "exact match of the answer (final step)",
        "score": "the reward metric's value (final step)",
        "failure": "why the episode ended early: a service that failed after retries, or a recording that ends "
        "(final step, only when it happened)",
        "failure_source": "what failed (`backend`, `retrieval`, `service`) when a service failed after its retries: "
        "the episode is then truncated (terminated=False) with reward 0 for that step, a failure "
        "and not an outcome (final step, only when it happened; `steer_envs.failures`)",
        "truncation": "`context` when the executor's prompt outgrew its model's context (`ContextOverflowError`): the "
        "episode is truncated (terminated=False) and scored as one without an answer (F1 0, no "
        "`failure`), an outcome that evaluations keep in their means (final step, only when it happened)",
        "truncation_detail": "the model's or server's message about the overflow (tokens asked for, the context) "
        "(final step, with `truncation`)",
    }
    #: the options (``gymnasium.make`` keywords) and their defaults, types and docs
    config_class: type[EnvConfig] = EnvConfig
    option_docs: dict[str, str] = EnvConfig.option_docs()
    config: EnvConfig

    def __init__(self, **options: Any) -> None:
        """``options``: the fields of :attr:`config_class` (:class:`EnvConfig`), by keyword."""
        config = self.config_class.from_options(type(self).__name__, **options)
        render_mode = config.render_mode
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise unknown_name("render_mode", render_mode, self.metadata["render_modes"])
        parse_spec(config.executor)  # fail fast, listing the valid kinds
        get_metric(config.metric)  # fail fast on an unknown metric name
        self.config = config
        self.render_mode = render_mode
        self._tasks: list[Task] | None = None
        self.executor: Executor = self._make_executor(
            config.executor,
            ExecutorContext(
                retriever=config.retriever, data_dir=config.data_dir, max_turns=config.max_turns, topk=config.topk
            ),
        )
        if not self.tasks:
            hint = (
                (
                    f"; {config.executor} supports none of the {self._unsupported} that do (a replay covers only "
                    "recorded tasks)"
                )
                if self._unsupported
                else ""
            )
            raise SteerEnvsError(
                f"no tasks match benchmarks={options.get('benchmarks')!r} split={config.split!r} "
                f"task_ids={options.get('task_ids')!r}" + hint
            )
        self.catalogue: tuple[InterventionTemplate, ...] = CATALOGUES[self.kind]
        self.observation_space = self._observation_space()
        self.action_space = (
            spaces.Discrete(len(self.catalogue)) if config.action_mode == "discrete" else AnyText(MAX_ACTION_CHARS)
        )
        self.task: Task | None = None
        self.interventions = 0
        self._decisions = 0
        self._action: str | None = None  # what the last step did, compactly (info["action"])
        self._failure_reported = False

    # -- tasks (reloaded after unpickling instead of being copied: SearchTaskEnv.tasks) ------------------------
    def _load_tasks(self) -> list[Task]:
        """The tasks ``reset`` draws from. Without explicit ``task_ids``, only those the executor supports (a
        ``replay:`` env picks recorded tasks by default)."""
        c = self.config
        if c.task_file:
            tasks = load_task_file(c.task_file, split=c.split)
            wanted = set(c.task_ids or ())
            tasks = [t for t in tasks if not wanted or t.id in wanted]
        else:
            tasks = load_tasks(c.benchmarks, c.split, c.data_dir, ids=c.task_ids)
        kept = tasks if c.task_ids else [t for t in tasks if self.executor.supports_task(t)]
        self._unsupported = len(tasks) - len(kept)
        return kept

    @property
    def deterministic(self) -> bool:
        """The executor's declaration (False for LLM-backed executors and pipelines with model roles)."""
        return bool(getattr(getattr(self, "executor", None), "deterministic", False))

    # -- spaces and observations --------------------------------------------------------------------------------
    @property
    def max_interventions(self) -> int:
        return 2 * self.config.max_turns + 2

    def _observation_space(self) -> spaces.Dict:
        return spaces.Dict(
            {
                "goal": AnyText(MAX_GOAL_CHARS),
                "transcript": AnyText(self.config.max_transcript_chars),
                "turn": spaces.Discrete(self.config.max_turns + 1),
                "interventions": spaces.Discrete(self.max_interventions + 1),
            }
        )

    @property
    def _episode_task(self) -> Task:
        """The task of the episode under way (``reset`` sets it)."""
        assert self.task is not None, "call reset() first"
        return self.task

    def _observation(self) -> dict[str, Any]:
        ex = self.executor
        return {
            "goal": self._episode_task.question[:MAX_GOAL_CHARS],
            "transcript": ex.transcript[-self.config.max_transcript_chars :],
            "turn": np.int64(min(ex.stats.turns, self.config.max_turns)),
            "interventions": np.int64(min(self.interventions, self.max_interventions)),
        }

    def _info(self, final: bool) -> dict[str, Any]:
        ex, task = self.executor, self._episode_task
        info: dict[str, Any] = {
            "task_id": task.id,
            "benchmark": task.benchmark,
            "executor_turns": ex.stats.turns,
            "interventions": self.interventions,
            "tokens": ex.stats.tokens,
            "answer": ex.answer,
            "privileged": ex.privileged(),
        }
        if self._action is not None:
            info["action"] = self._action
        if final:
            info.update(self._scores(ex.answer, task.golden_answers))
            if ex.failure:
                info["failure"] = ex.failure
            if getattr(ex, "failure_source", None) is not None:
                info["failure_source"] = ex.failure_source
            if getattr(ex, "truncation", None) is not None:
                info["truncation"] = ex.truncation
                info["truncation_detail"] = getattr(ex, "truncation_detail", None) or ""
        return info

    # -- gymnasium API ---------------------------------------------------------------------------------------------
    def _begin(self, task: Task, episode_seed: int, options: dict[str, Any]) -> None:
        """Reset the executor on ``task`` with the episode seed, then advance to the first decision point."""
        self.task = task
        self.executor.reset(task, seed=episode_seed)
        self.interventions = 0
        self._decisions = 0
        self._action = None
        self._failure_reported = False
        self._after_reset()

    def _step(self, action):
        if self.task is None:
            raise SteerEnvsError("call reset() before step()")
        if self._failure_reported or (self._finished() and not self._end_pending()):  # an early end is final too
            raise SteerEnvsError("the episode has ended; call reset() to start another")
        template, text = self._decode(action)
        self._action = action_label(template, text)
        self._decisions += 1
        count_step()  # the budget meter (steer_envs.meter): forks and pool workers count too
        if self._failure_pending():  # a service failed before this decision (during reset): nothing to act on
            return self._truncate()
        if self._context_pending():  # the executor outgrew its context before this decision (during reset)
            return self._truncate_context()
        reward = self._apply(template, text)
        if self._failure_pending():
            return self._truncate()
        if self._context_pending():
            return self._truncate_context(reward)
        terminated = self._finished()
        if terminated:
            reward += self.metric_fn(self.executor.answer, self.task.golden_answers)
        return self._observation(), float(reward), terminated, False, self._info(final=terminated)

    def _failure_pending(self) -> bool:
        """A service failed after its retries and the episode has not reported it yet."""
        return getattr(self.executor, "failure_source", None) is not None and not self._failure_reported

    def _context_pending(self) -> bool:
        """The executor outgrew its model's context and the episode has not reported it yet."""
        return getattr(self.executor, "truncation", None) == CONTEXT_TRUNCATION and not self._failure_reported

    def _end_pending(self) -> bool:
        """An early end (service failure or context truncation) waits for the step that reports it."""
        return self._failure_pending() or self._context_pending()

    def _no_answer_score(self) -> float:
        return float(self.metric_fn(None, self._episode_task.golden_answers))

    def _report_failure(self) -> None:
        self._failure_reported = True

    def _has_episode(self) -> bool:
        return self.task is not None

    def _render_text(self) -> str:
        from . import observation_text

        return observation_text(self._observation())

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

    # -- forking (GEM-style get_state / set_state / fork: SearchTaskEnv; the episode's part here) -------------------
    def _episode_state(self) -> dict[str, Any]:
        """The episode: executor state and counters (the env's RNG is added by ``get_state``)."""
        return {
            "task": self.task,
            "interventions": self.interventions,
            "decisions": self._decisions,
            "executor": self.executor.get_state(),
            "failure_reported": self._failure_reported,
        }

    def _restore_episode(self, state: dict[str, Any]) -> None:
        self.task = state["task"]
        self.interventions = state["interventions"]
        self._decisions = state["decisions"]
        self._action = None
        self.executor.set_state(state["executor"])
        self._failure_reported = state.get("failure_reported", False)

    def _fork_episode(self, clone: SearchEnv, seed: int | None) -> None:
        clone.executor = self.executor.fork()
        if seed is not None:
            reseed = getattr(clone.executor, "reseed", None)
            if reseed is not None:
                reseed(seed)

    def _release_backends(self) -> None:
        """The executor's (or pipeline's) backends: a model client's connections, the retriever reference."""
        close = getattr(self.executor, "close", None)
        if close is not None:
            close()
