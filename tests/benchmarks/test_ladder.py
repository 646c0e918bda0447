"""``steer-envs headroom``: the ladder runs end to end on a tiny limit and writes every rung, resumes without redoing
episodes, is the same for the same seeds; the reading bound reads the gold; the learnable ceiling reads only the
observation."""

from __future__ import annotations

import copy
import dataclasses
import json

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401
from baselines.ladder import GainPolicy, ReadingBound, gold_in_text, observation_features, retrieved_text
from baselines.simple import PASS
from benchmarks.harness.ladder import RUNGS
from benchmarks.harness.provenance import code_version
from steer_envs.cli.main import main
from steer_envs.errors import SteerEnvsError

TINY = [
    "--executor",
    "sim:loopy",
    "--split",
    "dev",
    "--benchmarks",
    "nq",
    "hotpotqa",
    "--limit",
    "2",
    "--seeds",
    "2",
    "--dev-limit",
    "2",
    "--max-at",
    "1",
    "--train-tasks",
    "3",
    "--train-forks",
    "1",
    "--planner-forks",
    "1",
    "--oracle-lookahead",
    "1",
]


def _episode_lines(folder) -> dict[str, int]:
    return {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in (folder / "episodes").glob("*.jsonl")}


@pytest.fixture(scope="module")
def tiny_ladder(tmp_path_factory):
    out = tmp_path_factory.mktemp("ladder") / "a"
    assert main(["headroom", *TINY, "--out", str(out)]) == 0
    return out


def test_headroom_writes_every_rung_with_intervals_and_dev_choices(tiny_ladder):
    data = json.loads((tiny_ladder / "ladder.json").read_text(encoding="utf-8"))
    rows = {r["rung"]: r for r in data["rows"]}
    assert list(rows) == list(RUNGS)
    code = data["code"]  # the code that wrote it (``+dirty``: a changed tree) and the files its numbers depend on
    assert code["commits"] == [code_version()] and code["clean"] == ("+dirty" not in code_version())
    profile = "steer_envs/executors/sim/profiles/default.json"
    assert {"benchmarks/harness/ladder.py", "baselines/ladder.py", profile} <= set(code["files"])
    for name, row in rows.items():
        if name != "none":
            iv = row["gain"]
            assert iv["low"] <= iv["mean"] <= iv["high"], (name, iv)
        if name not in ("none", "best_fixed_rule"):
            assert "vs_best_fixed_rule" in row
    assert rows["none"]["interventions_per_task"] == 0
    assert rows["reading_bound@1"]["interventions_per_task"] <= 1
    choices = json.loads((tiny_ladder / "choices.json").read_text(encoding="utf-8"))
    assert choices["learnable_ceiling"]["learner"] in ("hgb", "mlp")
    assert {t["learner"] for t in choices["threshold_trials"]} == {"hgb", "mlp"}
    assert len(choices["fixed_rule_scores"]) == 8 * 2  # every option at decisions 0 and 1
    table = (tiny_ladder / "ladder.md").read_text(encoding="utf-8")
    assert "split **dev**" in table and table.count("\n| ") == 1 + len(RUNGS)
    # 2 benchmarks x 2 tasks x 2 seeds per rung
    assert set(_episode_lines(tiny_ladder).values()) == {8}


def test_a_ladders_summary_recomputes_every_interval_from_its_episodes(tiny_ladder, tmp_path):
    """What the repository commits of a ladder (``ladder_summary``): every rung's paired intervals, recomputed from the
    summary's episodes alone, equal the ladder's."""
    from benchmarks.harness.ladder_summary import rows_from_summary, write_summary

    dest = write_summary(tiny_ladder, tmp_path / "summary", "steer-envs headroom ...")
    ladder = json.loads((tiny_ladder / "ladder.json").read_text(encoding="utf-8"))
    recomputed = rows_from_summary(dest)
    for row in ladder["rows"]:
        assert {k: row[k] for k in ("gain", "vs_best_fixed_rule") if k in row} == recomputed[row["rung"]]
    assert json.loads((dest / "run.json").read_text())["test_episodes"] == 8


def test_headroom_resumes_and_is_the_same_for_the_same_seeds(tiny_ladder, tmp_path):
    before = _episode_lines(tiny_ladder)
    assert main(["headroom", *TINY, "--out", str(tiny_ladder)]) == 0  # resumes: nothing left to do
    assert _episode_lines(tiny_ladder) == before
    again = tmp_path / "b"
    assert main(["headroom", *TINY, "--out", str(again)]) == 0
    first = json.loads((tiny_ladder / "ladder.json").read_text(encoding="utf-8"))
    second = json.loads((again / "ladder.json").read_text(encoding="utf-8"))
    assert first["rows"] == second["rows"] and first["choices"] == second["choices"]


def test_headroom_refuses_a_folder_of_another_protocol(tiny_ladder, capsys):
    argv = [a if a != "2" else "3" for a in TINY]
    code = main(["headroom", *argv, "--out", str(tiny_ladder)])
    assert code != 0
    assert "another protocol" in capsys.readouterr().err


def test_unknown_rung_is_named():
    from benchmarks.harness.ladder import LadderConfig

    with pytest.raises(SteerEnvsError, match="unknown rung.*learnable_ceiling"):
        LadderConfig(rungs=("none", "no_such_rung"))


# -- the reading bound reads the gold ---------------------------------------------------------------------------------
def test_gold_in_text_matches_whole_words_after_normalisation():
    assert gold_in_text("Doc 1 (Title: X) The film was made by Marcel Varnel in 1939.", ["marcel varnel"])
    assert not gold_in_text("He lived in Parisian style.", ["Paris"])
    assert not gold_in_text("anything", [""])


def _after_first_turn(env, seed=3):
    observation, info = env.reset(seed=seed)
    observation, _, terminated, _, info = env.step(PASS)
    return observation, terminated


def test_reading_bound_acts_on_the_gold_not_on_the_observation():
    env = gym.make("steer_envs/SearchSteering-v0", executor="sim:default", split="dev")
    index = {t.name: i for i, t in enumerate(env.unwrapped.catalogue)}
    seen = set()
    for seed in range(40):
        observation, terminated = _after_first_turn(env, seed)
        if terminated:
            continue
        docs = retrieved_text(observation["transcript"])
        task = env.unwrapped.task
        for golden, expected in ((task.golden_answers, None), (("zq xv no such answer",), "search_question")):
            env.unwrapped.task = dataclasses.replace(task, golden_answers=golden)
            rule = ReadingBound(index, at=1)
            rule.bind(env)
            rule.act(observation, {})  # decision 0: pass
            action = rule.act(observation, {})
            holds = gold_in_text(docs, golden)
            assert action == index["verify" if holds else "search_question"]
            if expected:
                assert action == index[expected]
            seen.add(holds)
        env.unwrapped.task = task
        # the same observation with the gold written into the documents: the reading flips to verify
        if docs and not gold_in_text(docs, task.golden_answers):
            planted = dict(
                observation,
                transcript=observation["transcript"].replace(
                    "</information>", f" {task.golden_answers[0]}</information>", 1
                ),
            )
            rule = ReadingBound(index, at=1)
            rule.bind(env)
            rule.act(planted, {})
            assert rule.act(planted, {}) == index["verify"]
    assert seen == {True, False}, "the sample should hold both readings"
    env.close()


def test_reading_bound_needs_the_env():
    rule = ReadingBound({"verify": 5, "search_question": 7}, at=0)
    with pytest.raises(SteerEnvsError, match="bind"):
        rule.act({"goal": "q", "transcript": "", "turn": 0, "interventions": 0}, {})


# -- the learnable ceiling reads the observation only -------------------------------------------------------------
class _Recorder:
    """A stand-in gain model that records what it was shown (a real fitted model is exercised above)."""

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []

    def predict(self, X):
        self.seen.append(np.array(X))
        return np.tile(np.linspace(0.1, 0.8, 8), (len(X), 1))


def test_learnable_ceiling_is_a_function_of_the_observation_alone():
    env = gym.make("steer_envs/SearchSteering-v0", executor="sim:loopy", split="dev")
    templates = [(t.name, t.template) for t in env.unwrapped.catalogue[1:]]
    observation, info = env.reset(seed=11)
    observation, _, _, _, info = env.step(PASS)
    features = observation_features(observation, templates)
    # a detached copy of the four observation fields gives the same features: nothing else is read
    plain = {k: copy.deepcopy(observation[k]) for k in ("goal", "transcript", "turn", "interventions")}
    np.testing.assert_array_equal(observation_features(plain, templates), features)
    # changing the hidden state (another executor state under the same observation) changes nothing it sees
    env.unwrapped.executor.reseed(999)
    env.unwrapped.task = dataclasses.replace(env.unwrapped.task, golden_answers=("something else",))
    np.testing.assert_array_equal(observation_features(observation, templates), features)
    model = _Recorder()
    policy = GainPolicy(model, templates, list(range(1, 9)), threshold=0.5)
    assert not hasattr(policy, "bind")  # play_episode never hands it the env
    poisoned = {"privileged": {"situation": "in_hand_wrong"}, "f1": 1.0}
    a = policy.act(plain, None)
    policy.reset()
    b = policy.act(plain, poisoned)
    assert a == b == 8  # the highest predicted gain (0.8 > 0.5), whatever info says
    np.testing.assert_array_equal(model.seen[0], model.seen[1])
    np.testing.assert_array_equal(model.seen[0][0], features)
    # the steerer's own notes become visible through the transcript only
    observation, _, _, _, _ = env.step(5)  # verify
    counts = observation_features(observation, templates)[-64 - 8 : -64]
    assert counts[[n for n, _ in templates].index("verify")] == 1
    env.close()
