"""``replay:<source>``: real recorded rollouts played back turn by turn, read-only.

Steering observations need transcripts of *real* agents, with their real drift (repeated searches, answers that
ignore the evidence, rollouts that never answer). The replay executor plays one recorded rollout of the task it
is reset on, one recorded turn per :meth:`step`, so an environment built on it produces exactly the
observations a steerer would have seen beside that agent. It cannot be steered: the recording does not know
what the agent would have done after an intervention, so :meth:`intervene` and :meth:`fork` raise an
:class:`ExecutorError` saying replay is read-only (``interactive = False``).

Spec: ``replay:<source>`` where source is a name from :func:`steer_envs.data.trajectory_files`
(``search_r1_base``, ``r1_searcher_qwen``, ...) or a path to a ``.jsonl(.gz)`` file of rows
``{"benchmark", "question", "response", "format", ...}``; ``replay:<source>#<row>`` pins one row.
Without a pinned row, :meth:`reset` finds the rows of the task by benchmark + normalised question; when several
agents' runs of a task were recorded, the ``seed`` picks one, deterministically.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.records import Task
from ..data.tasks import BENCHMARKS, load_tasks
from ..data.trajectories import RecordedRollout, load_rollouts, normalize_question, trajectory_files
from ..errors import SteerEnvsError
from .base import Executor, ExecutorContext, ExecutorError, Intervention, TurnResult
from .transcript import RecordedTurn, parse_rollout


@dataclass
class ReplaySource:
    """The rows of one trajectory file, indexed by (benchmark, normalised question); turns parsed on demand."""

    name: str
    rollouts: list[RecordedRollout]
    by_question: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    _turns: dict[int, tuple[RecordedTurn, ...]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rollouts):
            self.by_question.setdefault((row.benchmark, normalize_question(row.question)), []).append(i)

    def __len__(self) -> int:
        return len(self.rollouts)

    def turns(self, row: int) -> tuple[RecordedTurn, ...]:
        if row not in self._turns:
            self._turns[row] = tuple(parse_rollout(self.rollouts[row]))
        return self._turns[row]

    def rows_for(self, task: Task) -> list[int]:
        """Rows recorded for ``task``; tasks from outside the seven benchmarks match on the question alone."""
        question = normalize_question(task.question)
        rows = self.by_question.get((task.benchmark, question))
        if rows is None and task.benchmark not in BENCHMARKS:
            rows = [i for (_, q), found in self.by_question.items() if q == question for i in found]
        return list(rows or [])

    @property
    def benchmarks(self) -> list[str]:
        return sorted({b for b, _ in self.by_question})


_SOURCES: dict[Path, ReplaySource] = {}


def load_replay_source(source: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> ReplaySource:
    """Load (memoised per process) a trajectory source by name or path."""
    path = Path(source)
    if not path.is_file():
        files = trajectory_files(data_dir)
        path = files.get(str(source), path)
    key = path.resolve() if path.is_file() else Path(str(source))
    if key not in _SOURCES:
        rollouts = load_rollouts(source, data_dir)  # raises the "unknown trajectory source" error listing names
        _SOURCES[key] = ReplaySource(rollouts[0].source if rollouts else path.name.split(".")[0], rollouts)
    return _SOURCES[key]


def parse_replay_arg(arg: str) -> tuple[str, int | None]:
    """Split ``<source>#<row>`` into the source and the pinned row (``None`` when not pinned)."""
    if not arg:
        raise SteerEnvsError(
            "replay needs a source: replay:<name or file>[#row], "
            "e.g. replay:search_r1_base or replay:r1_searcher_qwen#12"
        )
    source, sep, row = arg.rpartition("#")
    if not sep:
        return arg, None
    if not row.isdigit():
        raise SteerEnvsError(f"replay row after '#' must be a non-negative integer, got {row!r} in 'replay:{arg}'")
    return source, int(row)


def _approx_tokens(text: str) -> int:
    """Whitespace-separated words: the recordings carry no token counts, this keeps ``tokens`` comparable in scale."""
    return len(text.split())


class ReplayExecutor(Executor):
    """Plays recorded turns; ``row`` is the row being replayed (after :meth:`reset`)."""

    deterministic = True
    interactive = False

    def __init__(self, spec: str, source: ReplaySource, pinned_row: int | None = None, max_turns: int = 10) -> None:
        super().__init__(spec, max_turns)
        if pinned_row is not None and not 0 <= pinned_row < len(source):
            raise SteerEnvsError(
                f"{spec}: row {pinned_row} is out of range; {source.name} has rows 0..{len(source) - 1}"
            )
        self.source = source
        self.pinned_row = pinned_row
        self.row: int | None = None
        self._cursor = 0

    @property
    def rollout(self) -> RecordedRollout | None:
        return self.source.rollouts[self.row] if self.row is not None else None

    @property
    def recorded_turns(self) -> tuple[RecordedTurn, ...]:
        return self.source.turns(self.row) if self.row is not None else ()

    def task_for_row(self, row: int) -> Task:
        """A :class:`Task` built from a row itself (for rows whose question is not in the shared tasks)."""
        r = self.source.rollouts[row]
        return Task(
            id=f"{self.source.name}#{row}",
            question=r.question,
            golden_answers=r.golden_answers or ("",),
            benchmark=r.benchmark,
        )

    def supports_task(self, task: Task) -> bool:
        """Only tasks with a recording (the pinned row's question, when a row is pinned)."""
        if self.pinned_row is not None:
            return normalize_question(self.source.rollouts[self.pinned_row].question) == normalize_question(
                task.question
            )
        return bool(self.source.rows_for(task))

    # -- Executor hooks ---------------------------------------------------------------------------------------
    def _reset(self, task: Task, seed: int | None) -> None:
        if self.pinned_row is not None:
            row = self.pinned_row
            recorded = self.source.rollouts[row]
            if normalize_question(recorded.question) != normalize_question(task.question):
                raise ExecutorError(
                    f"{self.spec} replays the question {recorded.question!r}, but the task {task.id!r} asks "
                    f"{task.question!r}; reset with that row's task (ReplayExecutor.task_for_row({row})) "
                    f"or drop '#{row}'"
                )
        else:
            rows = self.source.rows_for(task)
            if not rows:
                raise ExecutorError(
                    f"{self.spec} has no recorded rollout of task {task.id!r} ({task.benchmark}: {task.question!r}); "
                    f"it covers benchmarks {', '.join(self.source.benchmarks)}. Pick tasks with "
                    f"steer_envs.executors.replay.replay_task_ids({self.source.name!r})"
                )
            row = rows[random.Random(seed).randrange(len(rows))] if seed is not None else rows[0]
        self.row = row
        self._cursor = 0
        self.prompt = self.source.rollouts[row].prompt

    def _turn(self) -> TurnResult:
        turns = self.recorded_turns
        if self._cursor >= len(turns):
            return TurnResult("failed", "", error="the recorded rollout ends here, without an answer")
        turn = turns[self._cursor]
        self._cursor += 1
        tokens = _approx_tokens(turn.segment)
        if turn.kind == "search":
            return TurnResult("search", turn.segment, turn.observation, query=turn.query, tokens=tokens)
        if turn.kind == "answer":
            return TurnResult("answer", turn.segment, turn.observation, answer=turn.answer, tokens=tokens)
        if turn.kind == "invalid":
            return TurnResult("invalid", turn.segment, turn.observation, tokens=tokens)
        return TurnResult(
            "failed",
            turn.segment,
            turn.observation,
            tokens=tokens,
            error="the recorded agent stopped without giving an answer (truncated or unfinished)",
        )

    def _receive(self, intervention: Intervention) -> None:  # unreachable: Executor.intervene refuses first
        raise ExecutorError(f"{self.spec} is read-only: it replays recorded rollouts and cannot receive interventions")

    def _blank_copy(self) -> ReplayExecutor:
        return ReplayExecutor(self.spec, self.source, self.pinned_row, self.max_turns)

    def _get_impl_state(self) -> Any:
        return {"row": self.row, "cursor": self._cursor}

    def _set_impl_state(self, state: Any) -> None:
        self.row = state["row"]
        self._cursor = state["cursor"]


def make_replay_executor(arg: str, ctx: ExecutorContext) -> ReplayExecutor:
    """Factory of ``replay:<source>[#row]`` (registered in :mod:`steer_envs.executors.registry`)."""
    source_name, row = parse_replay_arg(arg)
    source = load_replay_source(source_name, ctx.data_dir)
    return ReplayExecutor(f"replay:{arg}", source, row, max_turns=ctx.max_turns)


def replay_task_ids(
    source: str | os.PathLike, data_dir: str | os.PathLike | None = None, split: str | None = None
) -> list[str]:
    """Ids of shared-data tasks that ``source`` has at least one recording of (file order, deterministic)."""
    replay = load_replay_source(source, data_dir)
    tasks = load_tasks([b for b in replay.benchmarks if b in BENCHMARKS], split=split, data_dir=data_dir)
    return [t.id for t in tasks if replay.rows_for(t)]
