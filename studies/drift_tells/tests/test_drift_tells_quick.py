"""studies/drift_tells: the card's rule reads each tell, agrees with the simulator's hidden kind on dev, and the
study runs end to end (a tiny run), its intervals and verdicts from the harness's one rule."""

from __future__ import annotations

import collections
import gzip
import json

import gymnasium as gym
import pytest

from steer_envs.executors.protocol import INVALID_ACTION_REPLY
from steer_envs.ids import STEERING_ENV
from studies.drift_tells.rule import read_tell
from studies.drift_tells.run import GAINS, ROWS, main

GOAL = "Where was the director of film The Circus Cyclone born?"


def turn(query: str, *titles: str) -> str:
    docs = " ".join(f"Doc {i + 1}(Title: {t}) some text." for i, t in enumerate(titles or ("Other",)))
    return f"<think> go on </think>\n<search> {query} </search>\n\n<information>{docs}</information>\n\n"


def test_each_card_tell_is_read_and_an_agent_on_track_is_not():
    first = turn("The Circus Cyclone director", "The Circus Cyclone", "Albert S. Rogell")
    assert read_tell(GOAL, "") is None
    assert read_tell(GOAL, first) is None
    assert read_tell(GOAL, first + turn("Albert S. Rogell", "Albert S. Rogell")) is None  # follows a lead
    assert read_tell(GOAL, first + turn("Albert S. Rogell early life")) == "side_goal"
    assert read_tell(GOAL, first + turn("The Circus Cyclone director")) == "redundant"
    assert read_tell(GOAL, first + turn(GOAL)) == "premature"
    assert read_tell(GOAL, turn(GOAL)) is None  # the question as the first search: not a tell
    assert read_tell(GOAL, first + "<think> hmm </think> I am not sure." + INVALID_ACTION_REPLY) == "never_answer"
    assert read_tell(GOAL, first + "<guidance> answer now </guidance>") is None  # a note is the last thing


def test_the_rule_reads_what_the_simulator_hides_on_dev():
    """Its reading against the hidden kind on ``sim:drift1`` dev: when it names a kind, it is almost always the
    kind under way; and it reads most side goals (the commonest drift there)."""
    env = gym.make(STEERING_ENV, executor="sim:drift1", split="dev")
    pairs: collections.Counter = collections.Counter()
    for seed in range(15):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            pairs[env.unwrapped.executor.kind(), read_tell(obs["goal"], obs["transcript"])] += 1
            obs, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    env.close()
    named = sum(n for (kind, tell), n in pairs.items() if tell is not None)
    right = sum(n for (kind, tell), n in pairs.items() if tell is not None and tell == kind)
    side_goals = sum(n for (kind, _), n in pairs.items() if kind == "side_goal")
    assert named > 20 and right / named > 0.9, pairs
    assert pairs["side_goal", "side_goal"] > side_goals / 2, pairs


@pytest.mark.slow
def test_the_study_runs_end_to_end(tmp_path, capsys):
    assert main(["--quick", "--levels", "sim:drift1", "--out", str(tmp_path / "runs"), "--summary", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    level = summary["levels"]["sim:drift1"]
    assert set(level["rows"]) == set(ROWS)
    assert level["specs"]["best_fixed_rule"] == "fixed_rule:option=refocus,at=3"  # the ladder's dev choice
    assert set(level["gains"]) == {f"{a} - {b}" for a, b in GAINS}
    for gain in level["gains"].values():
        assert gain["low"] <= gain["mean"] <= gain["high"]
        expected = "reproduces" if gain["low"] > 0 else "opposite" if gain["high"] < 0 else "not shown"
        assert gain["verdict"] == expected
    assert level["ladder"]["ceiling_over_rule"] > 0  # the committed ladder of drift1
    assert summary["code"]["files"] and "studies/drift_tells/rule.py" in summary["code"]["files"]
    with gzip.open(tmp_path / "episodes.jsonl.gz", "rt") as fh:
        episodes = [json.loads(line) for line in fh]
    assert len(episodes) == 3 * 7 * 2  # three rows, two tasks of each of seven benchmarks, one seed
    assert "| `sim:drift1` |" in capsys.readouterr().out


def test_the_committed_summary_recomputes_from_its_committed_episodes():
    """Every row and paired interval of ``docs/results/drift/hand_written`` from its episodes alone, by the study's
    own measurement (the harness's paired bootstrap)."""
    from benchmarks.harness.summary_rows import stored_record
    from steer_envs.paths import REPO_ROOT
    from studies.drift_tells.run import RESULTS, SUMMARY, measure

    summary = json.loads((RESULTS / SUMMARY).read_text())
    with gzip.open(RESULTS / "episodes.jsonl.gz", "rt") as fh:
        lines = [json.loads(line) for line in fh]
    assert RESULTS.is_relative_to(REPO_ROOT)
    for level, data in summary["levels"].items():
        records = {
            row: [stored_record(x, method=row) for x in lines if x["level"] == level and x["row"] == row]
            for row in ROWS
        }
        again = measure(records, data["config"]["benchmarks"])
        assert again["rows"] == data["rows"] and again["gains"] == data["gains"], level
        assert data["rows"]["none"]["episodes"] == 2616
