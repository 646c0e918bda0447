"""The executor protocol: the frozen agent that a steerer, planner or verifier supervises.

An executor runs one task at a time, one *turn* per :meth:`Executor.step` (a turn = one generated segment that
ends in a search or an answer, plus the search results it gets back). Supervision reaches it only as text,
through :meth:`Executor.intervene`. Executors are forkable (``get_state`` / ``set_state`` / ``fork``) so that
trainers can roll out counterfactual continuations from the same state (GEM's spawn / get_state / set_state).

A turn whose prompt outgrew the model's context (:class:`~steer_envs.llm.base.ContextOverflowError`) ends the
episode as an ``overflow`` turn: no answer, :attr:`Executor.truncation` set to ``"context"``, and no failure. It is
caught apart from :class:`~steer_envs.errors.ServiceError` on purpose: a service failure is no outcome and is
dropped from means, while talking past one's context is the executor's own outcome and is scored (F1 0), as
Search-R1 scores it (:mod:`steer_envs.failures`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ..data.records import Task
from ..errors import ServiceError, SteerEnvsError
from ..failures import CONTEXT_TRUNCATION, failure_source
from ..llm.base import ContextOverflowError

InterventionKind = Literal["note", "reject"]


@dataclass(frozen=True)
class Intervention:
    """A supervisor's message. ``note``: guidance inserted into the context; ``reject``: the proposed answer
    (or the last action) is refused and the executor must continue, with ``text`` as the feedback."""

    kind: InterventionKind
    text: str

    def __post_init__(self) -> None:
        if self.kind not in ("note", "reject"):
            raise SteerEnvsError(f"intervention kind must be 'note' or 'reject', got {self.kind!r}")


#: what kind of turn an executor took (``TurnResult.kind``); :data:`TURN_KINDS` is the same list at run time
TurnKind = Literal["search", "answer", "invalid", "failed", "message", "overflow"]
TURN_KINDS: tuple[str, ...] = get_args(TurnKind)


@dataclass(frozen=True)
class TurnResult:
    """What one executor turn produced. ``segment`` is the generated text, ``observation`` what the
    environment appended (search results, or the invalid-action reply). ``message`` is a multi-agent executor's
    turn that neither searched nor answered (a pipeline role's hand-off). ``overflow``: the prompt no longer fits the
    model's context, so the episode ends without an answer (``error`` says by how much)."""

    kind: TurnKind
    segment: str
    observation: str = ""
    query: str | None = None
    answer: str | None = None
    tokens: int = 0
    error: str | None = None
    #: for a ``failed`` turn caused by a service (``steer_envs.failures.FAILURE_SOURCES``); None for an outcome
    #: such as a recording that ends
    source: str | None = None


@dataclass
class ExecutorStats:
    """Counters reported in env ``info``."""

    turns: int = 0
    searches: int = 0
    invalid: int = 0
    interventions: int = 0
    tokens: int = 0


class ExecutorError(SteerEnvsError):
    """An executor could not continue (backend failure after retries, read-only replay, ...)."""


class Executor(ABC):
    """Base class of all executors. Subclasses implement :meth:`_reset`, :meth:`_turn`, :meth:`_receive`,
    and the state methods; the bookkeeping (transcript, budget, counters) lives here so all agree."""

    #: whether the same seed gives the same rollout (False for LLM-backed executors)
    deterministic: bool = True
    #: whether interventions and forks are supported (False for replay)
    interactive: bool = True

    def __init__(self, spec: str, max_turns: int = 10) -> None:
        self.spec = spec
        self.max_turns = max_turns
        self.task: Task | None = None
        self.prompt: str = ""
        self.transcript: str = ""
        self.answer: str | None = None
        self.done: bool = False
        self.failure: str | None = None
        #: what failed when ``failure`` is a service failure (the env then truncates the episode), else None
        self.failure_source: str | None = None
        #: ``"context"`` when the episode ended because the prompt outgrew the model's context (a scored outcome)
        self.truncation: str | None = None
        self.truncation_detail: str | None = None
        self.stats = ExecutorStats()
        self.history: list[TurnResult] = []

    @property
    def current_task(self) -> Task:
        """The task of the episode under way (what a turn reads; :meth:`reset` sets it)."""
        assert self.task is not None, "call reset(task) first"
        return self.task

    # -- public API ---------------------------------------------------------------------------------------
    def reset(self, task: Task, seed: int | None = None) -> None:
        """Start ``task``; ``seed`` fixes every random choice of a deterministic executor."""
        self.task = task
        self.transcript = ""
        self.answer = None
        self.done = False
        self.failure = None
        self.failure_source = None
        self.truncation = None
        self.truncation_detail = None
        self.stats = ExecutorStats()
        self.history = []
        self._reset(task, seed)

    def step(self) -> TurnResult:
        """Take one turn. Ends the episode on an answer, on a failure, or when the turn budget is spent.

        A :class:`~steer_envs.errors.ServiceError` (a model or retrieval server that failed after its retries)
        becomes a ``failed`` turn whose reason the env reports in ``info["failure"]``: the episode ends, a long
        run goes on. A :class:`~steer_envs.llm.base.ContextOverflowError` becomes an ``overflow`` turn: the episode
        ends without an answer and the env reports a scored truncation (``info["truncation"] = "context"``)."""
        if self.task is None:
            raise SteerEnvsError("call reset(task) before step()")
        if self.done:
            raise SteerEnvsError("the executor has finished this task; call reset(task) to start another")
        try:
            result = self._turn()
        except ContextOverflowError as exc:  # the executor talked past its context: an outcome, scored as no answer
            result = TurnResult("overflow", "", error=str(exc))
        except ServiceError as exc:  # a server the turn needed failed after its retries: end this episode only
            result = TurnResult("failed", "", error=str(exc), source=failure_source(exc))
        self.history.append(result)
        self.transcript += result.segment + result.observation
        self.stats.turns += 1
        self.stats.tokens += result.tokens
        if result.kind == "search":
            self.stats.searches += 1
        elif result.kind == "invalid":
            self.stats.invalid += 1
        elif result.kind == "answer":
            self.answer = result.answer
            self.done = True
        elif result.kind == "failed":
            self.failure = result.error or "executor failed"
            self.failure_source = result.source
            self.done = True
        elif result.kind == "overflow":
            self.truncation, self.truncation_detail = CONTEXT_TRUNCATION, result.error
            self.done = True
        if self.stats.turns >= self.max_turns:
            self.done = True
        return result

    def intervene(self, intervention: Intervention) -> None:
        """Deliver a note or a rejection. A rejection of a proposed answer reopens the episode."""
        if not self.interactive:
            raise ExecutorError(
                f"{self.spec} is read-only: it replays recorded rollouts and cannot receive interventions"
            )
        if self.task is None:
            raise SteerEnvsError("call reset(task) before intervene()")
        if intervention.kind == "reject" and self.answer is not None and self.failure is None:
            self.answer = None
            self.done = self.stats.turns >= self.max_turns
        self.stats.interventions += 1
        self._receive(intervention)

    def supports_task(self, task: Task) -> bool:
        """Whether this executor can run ``task`` (a replay covers only recorded tasks). Envs built without
        explicit ``task_ids`` keep only the tasks their executor supports."""
        return True

    @property
    def turns_left(self) -> int:
        return max(0, self.max_turns - self.stats.turns)

    def privileged(self) -> dict[str, Any]:
        """Ground truth known only to a simulator (drift labels, hop progress). Empty for real executors."""
        return {}

    def close(self) -> None:
        """Release what the executor holds: its model backend's connections and threads (``backend.close()``, where
        the backend has one). Idempotent, and the executor still runs afterwards (a client reconnects on use); forks
        share the backend, so the env that built the executor closes it. Subclasses with other resources extend it."""
        close = getattr(getattr(self, "backend", None), "close", None)
        if close is not None:
            close()

    def fork(self) -> Executor:
        """An independent executor continuing from this exact state (shares only read-only resources)."""
        if not self.interactive:
            raise ExecutorError(f"{self.spec} is read-only: replay executors cannot be forked")
        clone = self._blank_copy()
        clone.set_state(self.get_state())
        return clone

    def get_state(self) -> dict[str, Any]:
        """A self-contained, picklable snapshot; ``set_state`` of it on any executor of the same spec resumes."""
        return {
            "task": self.task,
            "prompt": self.prompt,
            "transcript": self.transcript,
            "answer": self.answer,
            "done": self.done,
            "failure": self.failure,
            "failure_source": self.failure_source,
            "truncation": self.truncation,
            "truncation_detail": self.truncation_detail,
            "stats": ExecutorStats(**vars(self.stats)),
            "history": list(self.history),
            "max_turns": self.max_turns,
            "impl": self._get_impl_state(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.task = state["task"]
        self.prompt = state["prompt"]
        self.transcript = state["transcript"]
        self.answer = state["answer"]
        self.done = state["done"]
        self.failure = state["failure"]
        self.failure_source = state.get("failure_source")  # snapshots from before failure sources: None
        self.truncation = state.get("truncation")  # snapshots from before context truncations: None
        self.truncation_detail = state.get("truncation_detail")
        self.stats = ExecutorStats(**vars(state["stats"]))
        self.history = list(state["history"])
        self.max_turns = state["max_turns"]
        self._set_impl_state(state["impl"])

    # -- for subclasses -------------------------------------------------------------------------------------
    @abstractmethod
    def _reset(self, task: Task, seed: int | None) -> None: ...

    @abstractmethod
    def _turn(self) -> TurnResult: ...

    @abstractmethod
    def _receive(self, intervention: Intervention) -> None: ...

    @abstractmethod
    def _blank_copy(self) -> Executor:
        """A new executor of the same spec sharing read-only resources (retriever, model), no episode state."""

    @abstractmethod
    def _get_impl_state(self) -> Any:
        """Subclass state (RNG, hidden variables, model context); must be a deep, independent copy."""

    @abstractmethod
    def _set_impl_state(self, state: Any) -> None: ...


@dataclass
class ExecutorContext:
    """Shared construction arguments every executor factory receives."""

    retriever: str = "bm25s"
    data_dir: str | None = None
    max_turns: int = 10
    topk: int = 3
    extra: dict[str, Any] = field(default_factory=dict)
