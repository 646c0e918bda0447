"""Conformance checks that ship with the library: run them on an executor you wrote (PettingZoo's ``api_test``
is the model).

:func:`check_executor` drives an executor through real tasks and checks what the environments rely on:

* **protocol** — ``reset`` starts clean, every ``step`` returns a :class:`~steer_envs.executors.TurnResult` of a
  known kind, the transcript is the concatenation of the turns, the episode ends within ``max_turns``, a
  finished executor refuses another step, ``privileged()`` is a dict;
* **interventions** — an interactive executor accepts notes and rejections (a rejection of a proposed answer
  reopens the episode); a read-only one refuses them, and refuses ``fork``, with an ``ExecutorError``;
* **determinism** (when the executor declares ``deterministic = True``) — the same task, seed and interventions
  give the same transcript and answer;
* **fork independence** — a fork continues from the same state and stepping it leaves the original untouched
  (a deterministic executor's fork and original, stepped alike, produce the same continuation);
* **state round trip** — ``get_state()`` survives pickling, is not changed by later steps, and ``set_state`` on a
  fresh executor of the same spec resumes the same episode (identically, for a deterministic executor).

A failed check raises :class:`ExecutorCheckError` naming the check, the task and what to fix::

    from steer_envs.testing import check_executor
    report = check_executor("mykind:arg")   # or check_executor(lambda: MyExecutor(...))
    print(report)
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .data.records import Task
from .errors import SteerEnvsError
from .executors.base import TURN_KINDS, Executor, ExecutorContext, ExecutorError, Intervention, TurnResult

NOTE = Intervention("note", "Verify the evidence before answering.")


class ExecutorCheckError(AssertionError):
    """A conformance check failed; the message names the check and how to fix the executor."""


@dataclass
class ExecutorCheckReport:
    """What ran: ``passed`` checks, ``skipped`` ones with the reason (e.g. determinism of an LLM executor)."""

    executor: str
    tasks: list[str]
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"check_executor({self.executor}) on {len(self.tasks)} task(s): {len(self.passed)} checks passed"]
        lines += [f"  ok    {name}" for name in self.passed]
        lines += [f"  skip  {name}: {why}" for name, why in self.skipped.items()]
        return "\n".join(lines)


def _fail(check: str, task: Task, message: str) -> ExecutorCheckError:
    return ExecutorCheckError(f"[{check}] task {task.id!r}: {message}")


def _factory(executor: str | Callable[[], Executor], context: ExecutorContext | None) -> Callable[[], Executor]:
    if callable(executor):
        return executor
    from .executors.registry import make_executor

    return lambda: make_executor(executor, context or ExecutorContext())


def _run_to_end(ex: Executor, interventions: dict[int, Intervention] | None = None) -> list[TurnResult]:
    """Step until done, delivering ``interventions[turn]`` before that turn (interactive executors only)."""
    out = []
    guard = 0
    while not ex.done:
        if interventions and ex.stats.turns in interventions and ex.interactive:
            ex.intervene(interventions[ex.stats.turns])
        out.append(ex.step())
        guard += 1
        if guard > ex.max_turns + 1:
            break
    return out


def _signature(ex: Executor) -> tuple:
    return (ex.transcript, ex.answer, ex.done, ex.failure, ex.stats.turns, ex.stats.searches, ex.stats.interventions)


def _default_tasks(make: Callable[[], Executor], n: int, data_dir: str | None) -> list[Task]:
    from .data.tasks import load_tasks

    probe = make()
    pool = load_tasks(split="dev", data_dir=data_dir)
    chosen = [t for t in pool[:: max(1, len(pool) // 400)] if probe.supports_task(t)][:n]
    if not chosen:
        chosen = [t for t in pool if probe.supports_task(t)][:n]
    if not chosen:
        raise SteerEnvsError("check_executor: the executor supports none of the dev tasks; pass tasks=[...]")
    return chosen


def check_executor(
    executor: str | Callable[[], Executor],
    tasks: Sequence[Task] | None = None,
    *,
    n_tasks: int = 3,
    seed: int = 0,
    context: ExecutorContext | None = None,
    data_dir: str | None = None,
) -> ExecutorCheckReport:
    """Run every conformance check on ``executor`` (a spec string, or a function returning a fresh executor)
    over ``tasks`` (default: ``n_tasks`` dev tasks the executor supports). Returns a report; raises
    :class:`ExecutorCheckError` on the first failed check."""
    make = _factory(executor, context)
    chosen = list(tasks) if tasks is not None else _default_tasks(make, n_tasks, data_dir)
    first = make()
    report = ExecutorCheckReport(getattr(first, "spec", repr(executor)), [t.id for t in chosen])
    if not isinstance(first, Executor):
        raise ExecutorCheckError(f"[protocol] {type(first).__name__} is not a steer_envs.executors.Executor subclass")
    for flag in ("deterministic", "interactive"):
        if not isinstance(getattr(first, flag, None), bool):
            raise ExecutorCheckError(f"[protocol] {type(first).__name__}.{flag} must be a bool class attribute")
    checks: list[tuple[str, Callable[[Callable[[], Executor], Task, int], None]]] = [
        ("protocol", _check_protocol),
        ("interventions", _check_interventions),
        ("determinism", _check_determinism),
        ("fork independence", _check_fork),
        ("state round trip", _check_state_round_trip),
    ]
    for name, check in checks:
        if name == "determinism" and not first.deterministic:
            report.skipped[name] = "the executor declares deterministic = False"
            continue
        if name == "fork independence" and not first.interactive:
            report.skipped[name] = "read-only executor (fork refusal is checked under interventions)"
            continue
        for i, task in enumerate(chosen):
            check(make, task, seed + i)
        report.passed.append(name)
    return report


# -- the checks ----------------------------------------------------------------------------------------------
def _check_protocol(make: Callable[[], Executor], task: Task, seed: int) -> None:
    ex = make()
    ex.reset(task, seed=seed)
    if ex.transcript != "" or ex.done or ex.stats.turns != 0 or ex.answer is not None:
        raise _fail("protocol", task, "reset() must start an empty episode (transcript '', not done, 0 turns)")
    rebuilt = ""
    for _turn in range(ex.max_turns + 1):
        if ex.done:
            break
        result = ex.step()
        if not isinstance(result, TurnResult) or result.kind not in TURN_KINDS:
            raise _fail("protocol", task, f"step() returned {result!r}; return a TurnResult of kind {TURN_KINDS}")
        if not isinstance(result.segment, str) or not isinstance(result.observation, str):
            raise _fail("protocol", task, "TurnResult.segment and .observation must be str")
        rebuilt += result.segment + result.observation
        if result.kind == "answer" and not isinstance(ex.answer, str):
            raise _fail("protocol", task, "an 'answer' turn must carry TurnResult.answer (a str)")
        if result.kind == "search" and not result.query:
            raise _fail("protocol", task, "a 'search' turn must carry the query it searched (TurnResult.query)")
    if not ex.done:
        raise _fail("protocol", task, f"the episode did not end within max_turns={ex.max_turns}")
    if ex.transcript != rebuilt:
        raise _fail(
            "protocol",
            task,
            "the transcript must be the turns' segments + observations, in order "
            "(let Executor.step do the bookkeeping; implement _turn)",
        )
    try:
        ex.step()
    except SteerEnvsError:
        pass
    else:
        raise _fail("protocol", task, "step() after the episode ended must raise SteerEnvsError")
    if not isinstance(ex.privileged(), dict):
        raise _fail("protocol", task, "privileged() must return a dict (empty for real executors)")
    try:
        pickle.dumps(ex.get_state())
    except Exception as exc:  # noqa: BLE001 - any pickling failure is the finding
        raise _fail("protocol", task, f"get_state() must be picklable ({type(exc).__name__}: {exc})") from None


def _check_interventions(make: Callable[[], Executor], task: Task, seed: int) -> None:
    ex = make()
    ex.reset(task, seed=seed)
    if not ex.interactive:
        for what, call in (("intervene", lambda: ex.intervene(NOTE)), ("fork", ex.fork)):
            try:
                call()
            except ExecutorError:
                continue
            raise _fail(
                "interventions",
                task,
                f"a read-only executor (interactive = False) must refuse {what}() with ExecutorError",
            )
        return
    ex.intervene(NOTE)
    if ex.stats.interventions != 1:
        raise _fail("interventions", task, "intervene() must count the intervention (stats.interventions)")
    _run_to_end(ex)
    if ex.answer is not None and ex.failure is None and ex.turns_left > 0:
        ex.intervene(Intervention("reject", "The answer does not match the evidence."))
        if ex.done or ex.answer is not None:
            raise _fail(
                "interventions",
                task,
                "a rejection of a proposed answer must reopen the episode (answer None, not done) while turns are left",
            )
        ex.step()


def _check_determinism(make: Callable[[], Executor], task: Task, seed: int) -> None:
    script = {1: NOTE} if make().interactive else None
    runs = []
    for _ in range(2):
        ex = make()
        ex.reset(task, seed=seed)
        _run_to_end(ex, script)
        runs.append(_signature(ex))
    if runs[0] != runs[1]:
        raise _fail(
            "determinism",
            task,
            "the same task, seed and interventions gave different episodes; make every "
            "random choice come from the seed given to reset(), or declare "
            "deterministic = False",
        )


def _first_turns(ex: Executor, n: int) -> None:
    for _ in range(n):
        if ex.done:
            return
        ex.step()


def _check_fork(make: Callable[[], Executor], task: Task, seed: int) -> None:
    def at_first_decision() -> Executor:
        ex = make()
        ex.reset(task, seed=seed)
        _first_turns(ex, 1)
        return ex

    ex = at_first_decision()
    before = _signature(ex)
    clone = ex.fork()
    if _signature(clone) != before:
        raise _fail("fork independence", task, "fork() must continue from the exact same state (transcript, counters)")
    if not clone.done:
        clone.intervene(NOTE)  # what happens to the fork must stay in the fork
    leaked = "a note given to a fork reached the original; _get_impl_state must return a deep, independent copy"
    if _signature(ex) != before:
        raise _fail("fork independence", task, leaked)
    if ex.deterministic:
        control = at_first_decision()  # never forked
        _run_to_end(control)
        _run_to_end(ex)
        if _signature(ex) != _signature(control):
            raise _fail("fork independence", task, leaked + " (the original's continuation changed)")
        a, b = at_first_decision().fork(), at_first_decision().fork()
        _run_to_end(a)
        _run_to_end(b)
        if _signature(a) != _signature(b):
            raise _fail(
                "fork independence",
                task,
                "two forks of one state, stepped alike, diverged; a deterministic "
                "executor's future must be a function of its state",
            )
    _run_to_end(clone)
    if not ex.deterministic and _signature(ex) != before:
        raise _fail(
            "fork independence",
            task,
            "stepping a fork changed the original; _get_impl_state must return a deep, independent copy",
        )


def _check_state_round_trip(make: Callable[[], Executor], task: Task, seed: int) -> None:
    ex = make()
    ex.reset(task, seed=seed)
    _first_turns(ex, 1)
    snapshot = ex.get_state()
    frozen = pickle.dumps(snapshot)
    at_snapshot = _signature(ex)
    _run_to_end(ex)
    if pickle.dumps(snapshot) != frozen:
        raise _fail(
            "state round trip",
            task,
            "get_state() returned live references that later steps changed; return deep copies",
        )
    fresh = make()
    fresh.set_state(pickle.loads(frozen))
    if _signature(fresh) != at_snapshot:
        raise _fail(
            "state round trip",
            task,
            "set_state(get_state()) on a fresh executor did not restore the transcript and counters",
        )
    if fresh.deterministic:
        replay = make()
        replay.set_state(pickle.loads(frozen))
        _run_to_end(fresh)
        _run_to_end(replay)
        if _signature(fresh) != _signature(replay):
            raise _fail(
                "state round trip",
                task,
                "two executors restored from one snapshot diverged; the state must "
                "hold everything the future depends on (the RNG included)",
            )
        original = make()
        original.set_state(pickle.loads(frozen))
        _run_to_end(original)
        if _signature(original) != _signature(ex):
            raise _fail(
                "state round trip", task, "an executor restored from a snapshot did not continue like the original did"
            )


__all__ = ["ExecutorCheckError", "ExecutorCheckReport", "check_executor"]
