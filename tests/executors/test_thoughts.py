"""The simulator's words: mined from real recorded agents, slotted, chosen by observable situation only."""

from __future__ import annotations

import re

import numpy as np

from steer_envs.data import load_tasks
from steer_envs.executors import make_executor
from steer_envs.executors.protocol import parse_action
from steer_envs.executors.sim.situation import Situation, situation_of
from steer_envs.executors.sim.thoughts import ThoughtBank, fill, load_thought_bank, question_core, slotify

QUESTION = "Who was the first African American mayor of the most populous city in the United States?"


def test_slotify_turns_copied_context_into_slots_and_drops_foreign_names():
    common = frozenset({"i", "need", "find", "search", "information", "results", "answer", "will", "about"})
    assert (
        slotify(
            "I need to find the first African American mayor of the most populous city.",
            QUESTION,
            None,
            None,
            [],
            common,
        )
        == "I need to find {topic}."
    )
    assert (
        slotify("I will search for information about New York City.", QUESTION, None, None, ["New York City"], common)
        == "I will search for information about {title}."
    )
    # a name the slots do not cover, a number, or a fact about another subject: dropped
    assert slotify("I need to find out about Harold Pinter.", QUESTION, None, None, [], common) is None
    assert slotify("I need to find the mayor in 1967.", QUESTION, None, None, [], common) is None
    assert slotify("The doosra is a delivery in cricket.", QUESTION, None, None, [], common) is None


def test_fill_uses_only_the_episode_s_observable_text():
    template = "From the search results, {title} shows that {topic} is {answer}."
    text = fill(
        template, "Who directed Jaws?", query="Jaws director", answer="Steven Spielberg", titles=["Jaws (film)"]
    )
    assert text == "From the search results, Jaws (film) shows that directed Jaws is Steven Spielberg."
    assert question_core("Who was the first mayor of X?") == "the first mayor of X"
    assert fill("", QUESTION) == ""


def test_situation_keys_back_off_from_specific_to_coarse():
    s = situation_of(QUESTION, "search", 4, "mayor New York", ["mayor New York"], ["New York City"], False)
    assert s == Situation("search", 4, repeat=True, overlap=True, proposed=False)
    assert s.keys() == ("search|t2|r1|o1|p0", "search|t2|r1|o1", "search|t2|o1", "search|t2", "search")
    bank = ThoughtBank.from_mined(("x",), [{"search|t0|r0|o0|p0": ["I need to find {topic}."]}])
    rng = np.random.default_rng(0)
    assert bank.choose(s, rng) == "I need to find {topic}."  # no later search recorded: the act-level back-off
    assert bank.choose(Situation("search", 0), rng) == "I need to find {topic}."
    assert bank.choose(Situation("answer", 3), rng) == ""


def test_the_bank_is_mined_from_the_recordings_and_every_thought_comes_from_it():
    bank = load_thought_bank(["search_r1_base"])
    assert bank is not None and len(bank) > 1000
    assert bank.by_key["answer|t1|r0|o1|p0"] and all(
        t == "" for t in bank.by_key["answer|t1|r0|o1|p0"]
    )  # Search-R1 base answers tersely
    assert any(t for t in bank.by_key["search|t0"])
    ex = make_executor("sim:default", max_turns=10)
    for i, task in enumerate(load_tasks("nq", "dev")[:30]):
        ex.reset(task, seed=i)
        queries, titles = [], []
        while not ex.done:
            turn = ex.stats.turns
            result = ex.step()
            think = parse_action(result.segment).think
            act = {"search": "search", "answer": "answer"}.get(result.kind, "invalid")
            situation = situation_of(task.question, act, turn, result.query, queries, titles, False)
            options = next(bank.by_key[k] for k in situation.keys() if bank.by_key.get(k))
            filled = {fill(t, task.question, result.query, result.answer, titles) for t in options}
            assert think in filled or (act == "invalid" and think == "..."), (think, situation)
            if result.kind == "search":
                queries.append(result.query)
                titles = re.findall(r"\(Title: (.*?)\)", result.observation)


def test_without_recordings_the_simulator_runs_silently(mini_data_dir):
    ex = make_executor("sim:default", max_turns=4, data_dir=str(mini_data_dir))
    task = load_tasks("nq", None, data_dir=str(mini_data_dir))[0]
    ex.reset(task, seed=0)
    while not ex.done:
        assert parse_action(ex.step().segment).think in ("", "...")
