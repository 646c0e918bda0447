"""The response table of the simulated searcher, measured: each note helps in the states a real agent would be helped
in and costs where it would be disrupted; no note is good everywhere.

States are reached by running real dev tasks; in each, the note is compared with passing over the same re-seeded
continuations (paired), so the difference is the note's effect in that hidden situation."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from steer_envs.data import f1, load_tasks
from steer_envs.executors import Intervention, make_executor

NOTES = {
    "keep_searching": "The evidence so far does not answer the question; do not answer yet, keep searching.",
    "verify": "Verify the evidence: re-read the retrieved documents and check that they answer the question.",
    "answer_now": "You already have enough evidence. Give your final answer now.",
    "stop_repeating": "Stop repeating searches you have already made.",
    "backtrack": "Backtrack: the entity you are following may be the wrong one; reconsider it.",
    "refocus": "Refocus on the goal.",
    "nonsense": "I like turtles.",
}
SEEDS = range(4)


def _finish(ex):
    while not ex.done:
        ex.step()
    return ex


def _effects(profile: str, tasks, max_states: int = 400) -> dict[tuple[str, str], list[float]]:
    """(situation, note) -> paired F1 differences (note minus pass) over re-seeded continuations."""
    ex = make_executor(profile, max_turns=10)
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    states = 0
    for i, task in enumerate(tasks):
        ex.reset(task, seed=i)
        while not ex.done and states < max_states:
            situation = ex.privileged()["situation"]
            states += 1
            for name, note in NOTES.items():
                for seed in SEEDS:
                    plain, noted = ex.fork(), ex.fork()
                    plain.reseed(states * 100 + seed)  # fresh dice per state, the same for note and pass
                    noted.reseed(states * 100 + seed)
                    noted.intervene(Intervention("note", note))
                    out[(situation, name)].append(
                        f1(_finish(noted).answer, task.golden_answers) - f1(_finish(plain).answer, task.golden_answers)
                    )
            ex.step()
    return out


@pytest.fixture(scope="module")
def effects() -> dict[tuple[str, str], list[float]]:
    measured = _effects("sim:default", load_tasks(None, "dev")[::6])
    for key, values in _effects("sim:loopy", load_tasks(["hotpotqa", "nq"], "dev")[::5], 300).items():
        measured[key].extend(values)
    return measured


def _mean(effects, situation, note) -> float:
    values = effects.get((situation, note), [])
    assert len(values) >= 8, f"too few {situation} states to measure {note} ({len(values)})"
    return float(np.mean(values))


@pytest.mark.slow
@pytest.mark.parametrize(
    "note,helps,hurts",
    [
        ("keep_searching", "premature_unseen", "in_hand_right"),
        ("verify", "in_hand_wrong", "in_hand_right"),
        ("verify", "premature_unrecognised", "in_hand_right"),
        ("answer_now", "redundant", "searching"),
        ("stop_repeating", "redundant", "searching"),
        ("backtrack", "fixated", "in_hand_right"),
    ],
)
def test_a_note_helps_where_it_should_and_costs_where_it_should(effects, note, helps, hurts):
    assert _mean(effects, helps, note) > 0.05, (note, helps)
    assert _mean(effects, hurts, note) < -0.02, (note, hurts)


@pytest.mark.slow
def test_no_note_is_good_in_almost_every_state(effects):
    situations = {s for s, _ in effects}
    for note in NOTES:
        means = [float(np.mean(effects[(s, note)])) for s in situations if len(effects.get((s, note), [])) >= 8]
        assert sum(m < 0 for m in means) >= 1, (note, means)  # somewhere it costs


@pytest.mark.slow
def test_a_note_without_actionable_meaning_costs_a_little(effects):
    nonsense = [v for (s, n), vals in effects.items() if n == "nonsense" for v in vals]
    assert -0.15 < float(np.mean(nonsense)) <= 0.0


def test_a_useful_search_hint_helps_and_a_useless_one_does_not():
    """'Search for X' helps only if X retrieves what the current hop needs."""
    ex = make_executor("sim:default", max_turns=10)
    useful, useless = [], []
    for i, task in enumerate(load_tasks(["nq", "popqa"], "dev")[:200]):
        ex.reset(task, seed=i)
        ex.step()
        hidden = ex.privileged()
        if ex.done or hidden["situation"] != "premature_unseen" or not hidden["next_target_titles"]:
            continue
        for seed in SEEDS:
            good, bad = ex.fork(), ex.fork()
            good.reseed(i * 100 + seed)
            bad.reseed(i * 100 + seed)
            good.intervene(Intervention("note", f"Search for: {hidden['next_target_titles'][0]}"))
            bad.intervene(Intervention("note", "Search for: recipes for banana bread"))
            useful.append(f1(_finish(good).answer, task.golden_answers))
            useless.append(f1(_finish(bad).answer, task.golden_answers))
    assert len(useful) >= 20
    assert np.mean(useful) > np.mean(useless) + 0.15
