"""The simulated searcher: hop plans from metadata, the intent grammar, profiles as data, determinism, forking,
drift that shows only in behaviour, and interventions that help or hurt."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from steer_envs.data import f1, load_tasks
from steer_envs.errors import SteerEnvsError, UnknownNameError
from steer_envs.executors import Intervention, make_executor
from steer_envs.executors.protocol import parse_action
from steer_envs.executors.sim import PROFILE_DIR, build_hops, load_profile, shipped_profiles


@pytest.fixture(scope="module")
def sim():
    return make_executor("sim:default", max_turns=10)


def finish(ex):
    while not ex.done:
        ex.step()
    return ex


# -- hop plans ----------------------------------------------------------------------------------------------
def test_hops_from_musique_decomposition():
    task = next(t for t in load_tasks("musique", "test") if t.question.startswith("What team was Anna Benson"))
    hops = build_hops(task, {})
    assert [h.finding for h in hops] == ["Kris Benson", "Pittsburgh Pirates"]
    assert hops[0].query.split() == ["Anna", "Benson", "spouse"] and hops[1].query.startswith("#1")
    assert hops[0].target_ids == ("p016312",) and "p016319" in hops[1].target_ids


def test_hops_from_2wiki_evidence_title_chain_and_single_hop():
    wiki = next(t for t in load_tasks("2wikimultihopqa", "test") if t.evidences)
    hops = build_hops(wiki, {})
    assert len(hops) == len(wiki.evidences) and hops[-1].finding == wiki.golden_answers[0]
    hotpot = load_tasks("hotpotqa", "test")[0]
    titles = {pid: f"T{pid}" for pid in hotpot.supporting_ids}
    hops = build_hops(hotpot, titles)
    assert len(hops) == 2 and hops[0].finding == titles[hotpot.supporting_ids[1]] and hops[1].query.startswith("#1")
    nq = load_tasks("nq", "test")[0]
    assert len(build_hops(nq, {})) == 1
    bamboogle = load_tasks("bamboogle", "test")[0]
    assert len(build_hops(bamboogle, {})) == 2 and build_hops(bamboogle, {})[0].target_ids == ()


# -- notes are read by meaning ---------------------------------------------------------------------------------
def test_paraphrases_of_one_intent_act_alike_and_any_note_is_read():
    """The simulator reads a note by meaning: two paraphrases with no word in common set the same thing in motion."""
    task = load_tasks("hotpotqa", "test")[5]
    ex = make_executor("sim:default", max_turns=10)
    ex.reset(task, seed=3)
    ex.step()
    readings = []
    for note in (
        "The evidence so far does not answer the question; do not answer yet, keep searching.",
        "Hold your horses: you're not there yet, look further.",
        "I like turtles.",
    ):
        branch = ex.fork()
        branch.intervene(Intervention("note", note))
        readings.append(branch.privileged()["understood_intents"][-1])
    assert readings == ["keep_searching", "keep_searching", "none"]


# -- profiles are data ------------------------------------------------------------------------------------------
def test_shipped_profiles_load():
    assert {"default", "weak", "strong", "loopy", "r1searcher", "r1searcher_llama"} <= set(shipped_profiles())
    for name in shipped_profiles():
        assert load_profile(name).name == name


def write_profile(tmp_path, mutate):
    obj = json.loads((PROFILE_DIR / "default.json").read_text())
    mutate(obj)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(obj))
    return path


def test_user_profile_file(tmp_path):
    path = write_profile(tmp_path, lambda o: o.update(name="mine", compliance=0.5))
    ex = make_executor(f"sim:{path}")
    assert ex.profile.compliance == 0.5 and ex.profile.name == "mine"


def test_profile_with_unknown_and_missing_keys_names_them(tmp_path):
    def mutate(o):
        o["complience"] = 0.5
        del o["compliance"]
        del o["hazard_base"]

    path = write_profile(tmp_path, mutate)
    with pytest.raises(SteerEnvsError, match=r"unknown key\(s\) complience; missing key\(s\) compliance, hazard_base"):
        make_executor(f"sim:{path}")


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda o: o.update(recognize_skill=1.5), "'recognize_skill' must be a probability"),
        (lambda o: o.update(benchmarks={"nq": {"skil": 0.1}}), r"benchmarks.nq\): unknown key\(s\) skil"),
        (lambda o: o.update(drift_weights={"looping": 1.0}), "'drift_weights' must map drift modes"),
    ],
)
def test_profile_bad_values(tmp_path, mutate, message):
    with pytest.raises(SteerEnvsError, match=message):
        load_profile(str(write_profile(tmp_path, mutate)))


def test_missing_profile_file_and_unknown_name():
    with pytest.raises(SteerEnvsError, match="does not exist"):
        load_profile("/no/such/profile.json")
    with pytest.raises(UnknownNameError, match="valid simulator profiles"):
        load_profile("genius")


# -- determinism and forking ------------------------------------------------------------------------------------
def test_same_seed_same_transcript_different_seed_differs(sim):
    task = load_tasks("hotpotqa", "test")[3]
    runs = []
    for seed in (5, 5, 6, 7, 8):
        sim.reset(task, seed=seed)
        runs.append(finish(sim).transcript)
    assert runs[0] == runs[1] and len(set(runs[1:])) > 1


def test_fork_and_reseed(sim):
    task = load_tasks("2wikimultihopqa", "test")[2]
    sim.reset(task, seed=1)
    sim.step()
    a, b = sim.fork(), sim.fork()
    assert finish(a).transcript == finish(b).transcript
    assert not sim.done  # the original is untouched
    continuations = set()
    for seed in range(10):
        c = sim.fork()
        c.reseed(seed)
        continuations.add(finish(c).transcript)
    assert len(continuations) > 1


# -- drift is visible only in behaviour -------------------------------------------------------------------------
LEAKS = re.compile(r"drift|fixat|redundan|prematur|side.goal|\bhop\b|never.answer", re.I)


def test_transcripts_reveal_no_labels_and_no_hidden_answer():
    ex = make_executor("sim:loopy", max_turns=10)
    rng = np.random.default_rng(0)
    notes = ["Verify the evidence.", "Answer now.", "Backtrack: wrong entity", "keep searching", "Search for: x"]
    labels_seen = set()
    for task in load_tasks(["hotpotqa", "nq", "musique"], "test")[::25]:
        ex.reset(task, seed=int(rng.integers(1000)))
        while not ex.done:
            if rng.random() < 0.2:
                ex.intervene(Intervention("note", notes[int(rng.integers(len(notes)))]))
            result = ex.step()
            if result.kind == "search":
                assert LEAKS.search(result.segment) is None, result.segment
                answer_seen = any(f1(g, g) and g.lower() in ex.transcript.lower() for g in task.golden_answers)
                for g in task.golden_answers:
                    if g.lower() in parse_action(result.segment).think.lower():
                        assert answer_seen
        labels_seen |= {lab for lab in ex.privileged()["drift_labels"] if lab}
    assert {"redundant", "side_goal"} <= labels_seen  # loopy drifts, and the labels stay privileged


def test_redundant_drift_repeats_queries_after_the_evidence():
    ex = make_executor("sim:loopy", max_turns=10)
    repeats = 0
    for i, task in enumerate(load_tasks("nq", "test")[:60]):
        ex.reset(task, seed=i)
        finish(ex)
        labels = ex.privileged()["drift_labels"]
        if "redundant" in labels:
            queries = [h.query for h in ex.history if h.kind == "search"]
            repeats += len(set(queries)) < len(queries)
    assert repeats >= 3


# -- interventions ----------------------------------------------------------------------------------------------
def mean_f1(spec, tasks, note_at_start=None):
    ex = make_executor(spec, max_turns=10)
    total = 0.0
    for i, task in enumerate(tasks):
        ex.reset(task, seed=i)
        if note_at_start:
            ex.intervene(Intervention("note", note_at_start))
        total += f1(finish(ex).answer, task.golden_answers)
    return total / len(tasks)


def test_misguided_answer_now_hurts_and_costs_budget():
    tasks = load_tasks("nq", "test")[:80]
    base = mean_f1("sim:default", tasks)
    hurried = mean_f1("sim:default", tasks, "Answer now.")
    assert hurried < base - 0.1  # answering before any evidence gives wrong answers
    ex = make_executor("sim:default", max_turns=10)
    ex.reset(tasks[0], seed=0)
    ex.intervene(Intervention("note", "lovely weather"))
    assert ex.max_turns == 9 and ex.stats.interventions == 1
    assert "<guidance> lovely weather </guidance>" in ex.transcript


def test_keep_searching_helps_against_premature_answers():
    ex = make_executor("sim:default", max_turns=10)
    gained = lost = 0
    for i, task in enumerate(load_tasks("hotpotqa", "test")[:200]):
        ex.reset(task, seed=i)
        ex.step()
        if ex.done or not ex.privileged()["premature"] or ex.privileged()["answer_would_be_correct"]:
            continue
        plain, helped = ex.fork(), ex.fork()
        helped.intervene(Intervention("note", "Don't answer yet, keep searching."))
        a = f1(finish(plain).answer, task.golden_answers)
        b = f1(finish(helped).answer, task.golden_answers)
        gained += b > a
        lost += b < a
    assert gained >= 10 and gained > 2 * lost
