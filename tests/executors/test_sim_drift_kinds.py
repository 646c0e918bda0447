"""The synthetic drift family (``sim:drift1..3``, dynamics ``kinds``): drift persists until its fitting note, starts at
a varying turn, shows its kind in behaviour, and a wrong or needless note costs; the classic profiles are unchanged."""

from __future__ import annotations

import json

import pytest

from steer_envs.data import load_tasks
from steer_envs.errors import SteerEnvsError
from steer_envs.executors import Intervention, make_executor
from steer_envs.executors.protocol import searched_queries
from steer_envs.executors.sim import DYNAMICS, PROFILE_DIR, SEARCHERS, KindDriftSearcher, load_profile
from steer_envs.executors.sim.kinds import FIT

LEVELS = ("drift1", "drift2", "drift3")
NOTES = {
    "answer_now": "You already have enough evidence. Give your final answer now.",
    "stop_repeating": "Stop repeating searches you have already made.",
    "refocus": "Refocus on the goal: {question}",
    "keep_searching": "The evidence so far does not answer the question; do not answer yet, keep searching.",
}


def finish(ex):
    while not ex.done:
        ex.step()
    return ex


def strict(tmp_path, **changes):
    """drift1 with every note followed and every misfit costly (effects become deterministic)."""
    obj = json.loads((PROFILE_DIR / "drift1.json").read_text())
    obj.update(compliance=1.0, misfit_cost=1.0, name="strict", **changes)
    path = tmp_path / "strict.json"
    path.write_text(json.dumps(obj))
    return make_executor(f"sim:{path}", max_turns=10)


def drifting(ex, kind: str, tasks, limit: int = 400):
    """Reset ``ex`` on tasks and seeds until a drift of ``kind`` has started (its first drifting turn comes next)."""
    for seed in range(limit):
        task = tasks[seed % len(tasks)]
        ex.reset(task, seed=seed)
        while not ex.done:
            ex.step()
            if ex.kind() is not None:
                break
        if not ex.done and ex.kind() == kind:
            return task
    raise AssertionError(f"no {kind} drift in {limit} episodes")


@pytest.fixture(scope="module")
def multihop():
    return load_tasks("hotpotqa", "train")[:40]


def test_family_loads_as_kinds_and_levels_differ():
    profiles = [load_profile(name) for name in LEVELS]
    assert all(p.dynamics == "kinds" and p.drift_recover == 0.0 for p in profiles)
    assert all("Synthetic" in p.description for p in profiles)
    assert [p.tell_clarity for p in profiles] == sorted((p.tell_clarity for p in profiles), reverse=True)
    assert [p.misfit_cost for p in profiles] == sorted(p.misfit_cost for p in profiles)
    assert isinstance(make_executor("sim:drift2"), KindDriftSearcher)
    assert not isinstance(make_executor("sim:default"), KindDriftSearcher)
    assert set(SEARCHERS) == set(DYNAMICS)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"dynamics": "wavy"}, "'dynamics' is set once per profile, to one of classic, kinds"),
        ({"dynamics": "classic"}, "'drift_weights.premature' needs"),
        ({"benchmarks": {"nq": {"dynamics": "classic"}}}, r"benchmarks.nq\): 'dynamics' is set once"),
        ({"tell_clarity": 1.5}, "'tell_clarity' must be a probability"),
    ],
)
def test_bad_family_profiles_fail_loudly(tmp_path, change, message):
    obj = json.loads((PROFILE_DIR / "drift2.json").read_text())
    obj.update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(SteerEnvsError, match=message):
        load_profile(str(path))


def test_drift_persists_to_the_end_of_the_budget(multihop):
    ex = make_executor("sim:drift1", max_turns=10)
    seen = set()
    for seed in range(150):
        ex.reset(multihop[seed % len(multihop)], seed=seed)
        labels = finish(ex).privileged()["drift_labels"]
        first = next((i for i, label in enumerate(labels) if label), None)
        if first is None or labels[first] == "premature":
            continue
        seen.add(labels[first])
        assert set(labels[first:]) == {labels[first]} and ex.answer is None, labels
    assert seen == {"redundant", "side_goal", "never_answer"}


def test_onset_varies_across_episodes_of_one_task(multihop):
    ex = make_executor("sim:drift2", max_turns=10)
    task = multihop[0]
    onsets = set()
    for seed in range(40):
        ex.reset(task, seed=seed)
        labels = finish(ex).privileged()["drift_labels"]
        onsets |= {next((i for i, label in enumerate(labels) if label), None)}
    assert len(onsets - {None}) >= 2 and None in onsets, onsets


def test_tells_show_the_kind_in_behaviour(multihop):
    """drift1 shows every tell: a word-for-word repeat, an invalid turn, an entity plus an aspect, the question."""
    ex = make_executor("sim:drift1", max_turns=10)
    for kind in ("redundant", "never_answer", "side_goal", "premature"):
        task = drifting(ex, kind, multihop)
        ex.step()  # the first turn of the drift
        queries = searched_queries(ex.transcript)
        if kind == "redundant":
            assert queries[-1] in queries[:-1]
        elif kind == "never_answer":
            assert ex.transcript.rstrip().endswith("Let me try again.")
        elif kind == "side_goal":
            assert queries[-1].split()[-1] in {"history", "life", "career", "family", "location", "awards"}
        else:
            assert queries[-1] == task.question


@pytest.mark.parametrize("kind", sorted(FIT))
def test_only_the_fitting_note_ends_a_drift_and_a_wrong_one_costs(tmp_path, multihop, kind):
    ex = strict(tmp_path, drift_weights={kind: 1.0})
    task = drifting(ex, kind, multihop)
    for intent, text in NOTES.items():
        branch = ex.fork()
        branch.intervene(Intervention("note", text.format(question=task.question)))
        if intent == FIT[kind]:
            assert branch.kind() is None and branch.privileged()["understood_intents"][-1] == intent
        else:
            assert branch.state.understood[-1] == "misfit"
            assert branch.kind() == kind or (kind == "premature" and branch.state.premature)


def test_a_needless_note_costs_an_agent_on_track(tmp_path, multihop):
    ex = strict(tmp_path, hazard_base=0.0, hazard_growth=0.0)
    costs = 0
    for seed in range(30):
        ex.reset(multihop[seed], seed=seed)
        ex.step()
        if ex.done or not ex.state.findings or (ex.evidence_in_hand and not ex.answer_would_be_right()):
            continue  # nothing to set back: no finding yet, or a wrong answer in hand
        before = (list(ex.state.findings), ex.answer_would_be_right())
        ex.intervene(Intervention("note", NOTES["stop_repeating"]))
        after = (list(ex.state.findings), ex.answer_would_be_right())
        assert ex.state.understood[-1] == "misfit" and after != before
        costs += 1
    assert costs >= 5


def test_same_seed_same_episode_and_forks_agree(multihop):
    ex = make_executor("sim:drift3", max_turns=10)
    runs = []
    for seed in (4, 4, 5):
        ex.reset(multihop[7], seed=seed)
        ex.step()
        a, b = ex.fork(), ex.fork()
        assert finish(a).transcript == finish(b).transcript and type(a) is KindDriftSearcher
        runs.append(finish(ex).transcript)
    assert runs[0] == runs[1]


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_family_thoughts_do_not_reveal_hidden_state(level):
    from benchmarks.leak_test import MAX_DIFFERENCE, collect, measure

    results = measure(collect(f"sim:{level}", "train", 2000, seed=0), collect(f"sim:{level}", "test", 1000, seed=1))
    assert results and all(r.difference <= MAX_DIFFERENCE for r in results), results
