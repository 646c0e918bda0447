"""Behaviour of the three environments: observations, info, rewards, the catalogue, the three decision schemes."""

from __future__ import annotations

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401
from steer_envs.data import f1
from steer_envs.envs import STEERING, observation_text
from steer_envs.envs.catalogue import CATALOGUES


def run(env, policy, seed, task_id=None):
    obs, info = env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
    steps, total = 0, 0.0
    while True:
        obs, r, term, trunc, info = env.step(policy(obs))
        total += r
        steps += 1
        if term or trunc:
            return obs, total, info, steps


def test_observation_has_no_hidden_state_and_info_separates_privileged():
    env = gym.make("steer_envs/SearchSteering-v0", split="test", benchmarks=["musique"]).unwrapped
    obs, info = env.reset(seed=0)
    assert set(obs) == {"goal", "transcript", "turn", "interventions"}
    assert obs["goal"] == env.task.question and obs["transcript"] == "" and obs["turn"] == 0
    assert {"task_id", "benchmark", "executor_turns", "interventions", "tokens", "privileged"} <= set(info)
    assert {"drift", "hop", "hops", "evidence_in_hand"} <= set(info["privileged"])
    obs, reward, info = run(env, lambda o: 0, 0)[:3]
    assert reward == pytest.approx(info["f1"]) == pytest.approx(f1(info["answer"], env.task.golden_answers))
    assert "em" in info and info["executor_turns"] == obs["turn"]
    text = observation_text(obs)
    assert text.startswith(f"Goal: {env.task.question}") and "Transcript so far:" in text


def test_intervention_cost_is_charged_per_intervention():
    kw = dict(split="test", benchmarks=["nq"])
    free = gym.make("steer_envs/SearchSteering-v0", **kw).unwrapped
    costly = gym.make("steer_envs/SearchSteering-v0", intervention_cost=0.25, **kw).unwrapped
    for seed in range(4):
        _, r_free, i_free, _ = run(free, lambda o: 5 if o["turn"] == 0 else 0, seed)
        _, r_cost, i_cost, _ = run(costly, lambda o: 5 if o["turn"] == 0 else 0, seed)
        assert i_free["interventions"] == i_cost["interventions"] == 1
        assert r_cost == pytest.approx(r_free - 0.25)


def test_catalogue_is_pass_then_note_templates_and_the_action_space_covers_it():
    env = gym.make("steer_envs/SearchSteering-v0", split="test").unwrapped
    assert env.catalogue is STEERING is CATALOGUES["steering"]
    assert [t.kind for t in env.catalogue] == ["pass"] + ["note"] * (len(STEERING) - 1)
    assert env.action_space.n == len(STEERING)  # every template is an action, and nothing else is
    assert len({t.name for t in env.catalogue}) == len(env.catalogue)
    env.reset(seed=3)
    env.step(0)
    transcript = env.executor.transcript
    note = env.catalogue[[t.name for t in env.catalogue].index("refocus")].fill(env.task.question, transcript)
    assert note == f"Refocus on the goal: {env.task.question}"
    new_title = env.catalogue[-1].fill(env.task.question, transcript)
    assert new_title.startswith("Search for: ") and len(new_title) > len("Search for: ")


def test_steering_decision_every_k_turns():
    env = gym.make(
        "steer_envs/SearchSteering-v0", split="test", decision_every=3, executor="sim:loopy", benchmarks=["hotpotqa"]
    ).unwrapped
    obs, _ = env.reset(seed=1)
    obs, *_ = env.step(0)
    assert obs["turn"] in (1, 2, 3)  # up to three executor turns per decision (fewer if it answered)


def test_planning_is_one_decision():
    env = gym.make("steer_envs/SearchPlanning-v0", split="test").unwrapped
    obs, info = env.reset(seed=0)
    assert obs["transcript"] == ""
    _, _, term, _, info = env.step(1)
    assert term and info["interventions"] == 1 and info["executor_turns"] >= 1
    assert "<guidance> Plan:" in env.executor.transcript


def test_verification_rejection_reopens_and_can_hurt():
    env = gym.make("steer_envs/SearchVerification-v0", split="test", benchmarks=["nq"]).unwrapped
    accepted, rejected, decisions = [], [], 0
    for seed in range(40):
        obs, _ = env.reset(seed=seed)
        if not obs["proposed_answer"]:
            continue
        state = env.get_state()
        _, r_acc, term, _, _ = env.step(0)
        assert term
        env.set_state(state)
        _, r_rej, info, steps = run_from(env, [1, 0, 0, 0])
        accepted.append(r_acc)
        rejected.append(r_rej)
        decisions += steps
    assert len(accepted) >= 20 and decisions > len(accepted)  # a rejection leads to a new proposal
    right = [i for i, r in enumerate(accepted) if r == 1.0]
    assert any(rejected[i] < 1.0 for i in right)  # over-rejection loses some right answers


def run_from(env, actions):
    total, steps = 0.0, 0
    for a in actions:
        obs, r, term, _, info = env.step(a)
        total += r
        steps += 1
        if term:
            break
    return obs, total, info, steps


def test_a_free_intervention_rewards_zero_not_minus_zero():
    env = gym.make("steer_envs/SearchSteering-v0", split="dev", benchmarks=["musique"])
    for seed in range(6):
        env.reset(seed=seed)
        _, reward, terminated, _, _ = env.step(4)  # an intervention, intervention_cost 0
        if not terminated:
            assert str(reward) == "0.0"  # printed rewards of discrete steps never read -0.0
            return
    pytest.fail("every episode ended at the first step")
