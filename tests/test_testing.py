"""``steer_envs.testing.check_executor``: it passes the built-in executors and catches each kind of broken one."""

from __future__ import annotations

import random

import pytest

from steer_envs.data.records import Task
from steer_envs.executors import Executor, Intervention, TurnResult
from steer_envs.executors.llm_search import LLMSearchExecutor, LLMSearchSettings
from steer_envs.testing import ExecutorCheckError, check_executor
from tests.llm.support import ScriptedBackend

TASKS = [
    Task(id=f"t{i}", question=f"who wrote book {i}?", golden_answers=("someone",), benchmark="nq") for i in range(2)
]


class Toy(Executor):
    """Searches a random word of the question (seeded), then answers; a note makes it search once more."""

    def __init__(self, max_turns: int = 4) -> None:
        super().__init__("toy:", max_turns)
        self.rng = random.Random(0)
        self.extra: list[str] = []

    def _reset(self, task, seed):
        self.rng = random.Random(seed)
        self.extra = []

    def _turn(self) -> TurnResult:
        if self.stats.turns == 0 or self.extra:
            word = self.extra.pop() if self.extra else self.rng.choice(self.task.question.split())
            return TurnResult(
                "search", f"<search> {word} </search>", "\n<information>Doc 1(Title: x) y</information>\n", query=word
            )
        guess = f"{self.rng.random():.3f}"
        return TurnResult("answer", f"<answer> {guess} </answer>", answer=guess)

    def _receive(self, intervention: Intervention) -> None:
        self.transcript += f"\n<guidance> {intervention.text} </guidance>\n"
        self.extra.append("more")

    def _blank_copy(self):
        return type(self)(self.max_turns)

    def _get_impl_state(self):
        return {"rng": self.rng.getstate(), "extra": list(self.extra)}

    def _set_impl_state(self, state):
        self.rng.setstate(state["rng"])
        self.extra = list(state["extra"])


def test_a_well_behaved_executor_passes_every_check():
    report = check_executor(Toy, TASKS)
    assert report.passed == ["protocol", "interventions", "determinism", "fork independence", "state round trip"]
    assert "5 checks passed" in str(report)


def test_the_built_in_executors_pass(shared_data_dir):
    assert len(check_executor("sim:default", n_tasks=2).passed) == 5
    replay = check_executor("replay:search_r1_base", n_tasks=2)
    assert "fork independence" in replay.skipped and "interventions" in replay.passed


def test_an_llm_executor_passes_with_determinism_skipped(shared_data_dir):
    backend = ScriptedBackend(["<search> danube delta </search>", "<answer> Romania </answer>"])
    report = check_executor(lambda: LLMSearchExecutor("scripted:", backend, LLMSearchSettings(), max_turns=4), TASKS)
    assert "determinism" in report.skipped and "state round trip" in report.passed


class Overflows(Toy):
    """Its model's context fills after the first search: the base class turns that into an ``overflow`` turn."""

    def _turn(self) -> TurnResult:
        from steer_envs.llm.base import ContextOverflowError

        if self.stats.turns >= 1:
            raise ContextOverflowError("the prompt has 600 tokens; the model's context is 512")
        return super()._turn()


def test_an_executor_that_outgrows_its_context_passes():
    """An overflow is an outcome (a scored truncation), one of the turn kinds the checker accepts."""
    report = check_executor(Overflows, TASKS)
    assert "protocol" in report.passed and "interventions" in report.passed


class BadKind(Toy):
    def _turn(self):
        return TurnResult("thinking", "hmm")  # type: ignore[arg-type]


class Unseeded(Toy):
    def _reset(self, task, seed):
        self.rng = random.Random()  # ignores the seed
        self.extra = []


class SharedState(Toy):
    def _get_impl_state(self):
        return {"rng": self.rng.getstate(), "extra": self.extra}  # a live list, not a copy

    def _set_impl_state(self, state):
        self.rng.setstate(state["rng"])
        self.extra = state["extra"]


class ForgetsState(Toy):
    def _set_impl_state(self, state):
        pass  # the RNG and pending searches are lost


class ReadOnlyThatListens(Toy):
    """Declares itself read-only but accepts notes and forks anyway."""

    interactive = False

    def intervene(self, intervention):
        self._receive(intervention)

    def fork(self):
        clone = self._blank_copy()
        clone.set_state(self.get_state())
        return clone


class NeverEnds(Toy):
    def _turn(self):
        return TurnResult("search", "<search> x </search>", query="x")

    def step(self):  # overrides the budget bookkeeping: never done
        result = self._turn()
        self.history.append(result)
        self.transcript += result.segment
        self.stats.turns += 1
        return result


@pytest.mark.parametrize(
    "broken, check, hint",
    [
        (BadKind, "protocol", "TurnResult of kind"),
        (NeverEnds, "protocol", "did not end within max_turns"),
        (Unseeded, "determinism", "seed given to reset"),
        (SharedState, "fork independence", "reached the original"),
        (ForgetsState, "state round trip", "did not restore|diverged|did not continue"),
        (ReadOnlyThatListens, "interventions", "must refuse intervene"),
    ],
)
def test_each_broken_executor_fails_its_check_with_a_fix(broken, check, hint):
    with pytest.raises(ExecutorCheckError, match=rf"\[{check}\] task 't0': .*({hint})"):
        check_executor(broken, TASKS)
