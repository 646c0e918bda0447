"""The five-role pipeline is an Executor: the shipped conformance checks (steer_envs.testing.check_executor) run on
it and pass, and its turns are reported as TurnResults whose segments rebuild the hand-off log."""

from __future__ import annotations

import pytest

from steer_envs.data.tasks import load_tasks
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.base import Executor, ExecutorContext, Intervention
from steer_envs.executors.pipeline import make_pipeline
from steer_envs.testing import check_executor


def _make(max_turns: int = 12):
    return lambda: make_pipeline("sim:default", ExecutorContext(max_turns=max_turns))


@pytest.mark.slow  # every check runs several full pipeline episodes per task
def test_pipeline_passes_check_executor():
    report = check_executor(_make(), n_tasks=2, seed=0)
    assert isinstance(_make()(), Executor)
    assert report.passed == ["protocol", "interventions", "determinism", "fork independence", "state round trip"]
    assert not report.skipped


def test_turns_rebuild_the_handoff_log():
    task = load_tasks(split="dev")[5]
    p = _make()()
    p.reset(task, seed=3)
    assert p.transcript == "" and p.stats.turns == 0
    results = []
    while not p.done:
        results.append(p.step())
    assert "".join(r.segment for r in results) == p.transcript
    assert results[0].kind == "message" and p.handoffs[0].sender == "planner"
    assert any(r.kind == "search" and r.query for r in results)
    assert results[-1].kind in ("answer", "message") and (results[-1].kind == "answer") == isinstance(p.answer, str)
    with pytest.raises(SteerEnvsError):
        p.step()


def test_reject_before_the_first_message_is_refused():
    p = _make()()
    p.reset(load_tasks(split="dev")[0], seed=0)
    with pytest.raises(SteerEnvsError, match="nothing to reject"):
        p.intervene(Intervention("reject", "no"))
