"""Rule baselines and the method registry, on the real steering env's catalogue."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.registry import MethodContext, MethodSpec, build_policy, get_method, known_methods, parse_method
from baselines.simple import DriftRule, RandomIntervention, catalogue_options, pick_option
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.protocol import render_information, render_search
from steer_envs.retrieval.base import Hit

HIT = Hit("p1", "Some Film", "Some Film is a 1999 film directed by Jane Doe.", 1.0)


def _obs(queries, turn):
    transcript = "".join(render_search(q) + render_information([HIT]) for q in queries)
    return {"goal": "Who directed Some Film?", "transcript": transcript, "turn": turn, "interventions": 0}


@pytest.fixture(scope="module")
def options():
    return catalogue_options(MethodContext(benchmarks=("nq",)))


def test_every_method_of_the_issue_is_registered():
    names = {m.name for m in known_methods()}
    assert {
        "no_supervision",
        "random",
        "always",
        "drift_rule",
        "best_fixed_rule",
        "steering_untrained",
        "steering_zero_shot",
        "steering_rl",
        "planning_untrained",
        "planning_rl",
        "verification_untrained",
        "verification_rl",
        "filtered_bc",
        "sb3_ppo",
    } <= names


def test_method_labels_are_canonical_and_tau_does_not_change_the_checkpoint():
    a = parse_method("steering_rl:tau=0.3,m=4")
    b = parse_method(" steering_rl:m=4,tau=0.3 ")
    assert a.label == b.label == "steering_rl:m=4,tau=0.3"
    assert a.training_label == parse_method("steering_rl:m=4").label == "steering_rl:m=4"
    assert MethodSpec("random", {}).label == "random"
    assert a.options.tau == 0.3 and a.options.m == 4
    with pytest.raises(SteerEnvsError, match="key=value"):
        parse_method("random:p")
    assert get_method("planning_rl").env_id.endswith("SearchPlanning-v0")


def test_drift_rule_fires_on_a_repeated_query_and_late_turns(options):
    rule = DriftRule(pick_option(options, "repeat"), pick_option(options, "answer"), turn_threshold=6)
    assert rule.repeat_option.name == "stop_repeating" and rule.late_option.name == "answer_now"
    rule.reset(0)
    assert rule.act(_obs(["some film director"], 1), {}) == 0
    assert rule.act(_obs(["some film director", "jane doe"], 2), {}) == 0
    fired = rule.act(_obs(["some film director", "jane doe", "director some film"], 3), {})
    assert fired == rule.repeat_option.index
    assert rule.act(_obs(["some film director", "jane doe", "director some film"], 4), {}) == 0  # once per repeat
    assert rule.act(_obs(["a", "b", "c", "d"], 6), {}) == rule.late_option.index
    assert rule.act(_obs(["a", "b", "c", "d", "e"], 7), {}) == 0  # the late nudge is given once


def test_random_intervention_rate_and_reproducibility(options):
    policy = RandomIntervention(options, p=0.25)
    policy.reset(11)
    actions = [policy.act({}, {}) for _ in range(4000)]
    assert abs(np.mean([a != 0 for a in actions]) - 0.25) < 0.03
    assert {a for a in actions if a} == {o.index for o in options}
    policy.reset(11)
    assert [policy.act({}, {}) for _ in range(4000)] == actions
    with pytest.raises(SteerEnvsError):
        RandomIntervention(options, p=1.5)


def test_random_without_a_rate_to_match_says_what_to_do():
    context = MethodContext(benchmarks=("nq",))
    with pytest.raises(SteerEnvsError, match="evaluate 'steering_rl' first, or give the rate"):
        build_policy("random", context)
    context.measured_rate = lambda label: 0.2 if label == "steering_rl" else None
    assert build_policy("random", context).p == pytest.approx(0.2)


def test_always_uses_the_named_option():
    policy = build_policy("always:option=verify", MethodContext(benchmarks=("nq",)))
    assert policy.act({}, {}) == policy.option.index and policy.option.name == "verify"
    with pytest.raises(SteerEnvsError, match="options: answer_now"):
        build_policy("always:option=shout", MethodContext(benchmarks=("nq",)))


def test_llm_zero_shot_steering_runs_on_a_causal_lm(tmp_path):
    """The causal-LM steerer as a zero-shot method (a tiny random transformer here; gemma in docs/results.md)."""
    from benchmarks.harness.runner import run_episode
    from steer_envs.episodes import episode_seed
    from steer_envs.llm.tiny import build_tiny_causal_lm

    model = build_tiny_causal_lm(tmp_path / "lm")
    context = MethodContext(benchmarks=("nq",))
    agent = build_policy(f"steering_zero_shot:model=hf:{model},tau=0.3", context)
    assert agent.run_info["backbone"] == "causal_lm" and agent.tau == 0.3
    env = context.make_env(split="dev")
    from steer_envs.data import load_tasks

    task = load_tasks("nq", "dev")[0].id
    first = run_episode(env, agent, episode_seed(task, 0), task, "llm", 0)
    again = run_episode(env, agent, episode_seed(task, 0), task, "llm", 0)
    assert first.decisions >= 1 and (first.f1, first.interventions) == (again.f1, again.interventions)
