"""GuidedSearch-v0: guidance in the prompt and as an executed prefix, the unguided view in info, and the admissible
set's observability rule. Its conformance (check_env, determinism, pickling, forks, vectorisation, close, render,
the RNG seed) runs with every other registered id in tests/test_conformance.py."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401
from steer_envs.envs.admissible import FEATURE_NAMES, HINT_COLUMNS, RetrievedDoc, build_candidates, candidate_features
from steer_envs.envs.base import EnvConfig, SearchTaskConfig, UnknownOptionError
from steer_envs.envs.guided import GuidedSearchConfig
from steer_envs.errors import InvalidActionError, SteerEnvsError
from steer_envs.reference_plans import HINT_HEADER

ENV_ID = "steer_envs/GuidedSearch-v0"
TASK = "musique/2hop__574419_270105"


def make(mode="discrete", **kw):
    return gym.make(ENV_ID, action_mode=mode, **{"split": "train", "benchmarks": ["musique", "nq"], **kw})


def test_prompt_hint_and_unguided_view():
    env = make().unwrapped
    obs, info = env.reset(seed=0, options={"task_id": TASK, "plan_k": 2})
    assert HINT_HEADER in obs["prompt"] and '1. search: {"query": "Van Hook Township' in obs["prompt"]
    assert "3. answer" not in obs["prompt"]
    unguided = info["unguided_observation"]
    assert HINT_HEADER not in unguided["prompt"]
    plain, _ = env.reset(seed=0, options={"task_id": TASK})
    # the unguided view is exactly the observation of the same state without guidance
    assert unguided["prompt"] == plain["prompt"] and np.array_equal(unguided["features"], plain["features"])
    hint_cols = list(HINT_COLUMNS)
    assert obs["features"][:, hint_cols].any() and not unguided["features"][:, hint_cols].any()
    # the other columns are the same: the hint changes nothing else the policy sees
    other = [i for i in range(len(FEATURE_NAMES)) if i not in hint_cols]
    assert np.array_equal(obs["features"][:, other], unguided["features"][:, other])


def test_prefix_mode_executes_reference_searches_but_never_the_answer():
    env = make().unwrapped
    obs, info = env.reset(seed=0, options={"task_id": TASK, "plan_k": 3, "plan_mode": "prefix"})
    assert HINT_HEADER not in obs["prompt"]
    assert obs["transcript"].count("<search>") == 2 and "<answer>" not in obs["transcript"]
    assert info["env_steps"] == 2 and info["prefix_executed"] == 3 and not env.state.done
    assert info["unguided_observation"]["transcript"] == obs["transcript"]
    # the state after the prefix equals the state reached by advancing a k=0 episode over the same reference
    other = make().unwrapped
    other.reset(seed=0, options={"task_id": TASK, "plan_mode": "prefix"})
    other.advance_prefix(3)
    assert other.state.transcript == env.state.transcript
    assert np.array_equal(other._observation()["features"], obs["features"])


def test_text_mode_speaks_the_search_r1_protocol():
    env = make("text").unwrapped
    env.reset(seed=0, options={"task_id": TASK})
    obs, r, term, _, info = env.step("<think> find the county </think> <search> Van Hook Township </search>")
    assert "<information>Doc 1(Title:" in obs["transcript"] and "<think> find the county </think>" in obs["transcript"]
    obs, r, term, _, info = env.step("I am not sure.")
    assert "My previous action is invalid" in obs["transcript"] and not term
    obs, r, term, _, info = env.step("<answer> Stanley </answer>")
    assert term and r == 1.0 and info["em"] == 1.0
    with pytest.raises(InvalidActionError, match="text action must be a str"):
        env.reset(seed=0)
        env.step(3)


def test_discrete_actions_and_errors():
    env = make().unwrapped
    obs, _ = env.reset(seed=0, options={"task_id": TASK})
    empty = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs, r, term, _, _ = env.step(empty)
    assert "My previous action is invalid" in obs["transcript"] and env.state.turns == 1
    with pytest.raises(InvalidActionError, match="out of range"):
        env.step(10_000)
    with pytest.raises(InvalidActionError, match="integer index"):
        env.step("search: x")
    with pytest.raises(SteerEnvsError, match="plan_k"):
        make(plan_k=-1)
    with pytest.raises(SteerEnvsError, match="plan_mode"):
        make(plan_mode="assistant")
    with pytest.raises(SteerEnvsError, match="not among this env"):
        env.reset(options={"task_id": "nq/does-not-exist"})


def test_episode_ends_with_the_answer_score_or_the_turn_budget():
    env = make(max_turns=2).unwrapped
    obs, _ = env.reset(seed=0, options={"task_id": TASK})
    queries = [i for i, c in enumerate(env.candidates) if c.kind == "search"]
    obs, r, term, _, _ = env.step(queries[0])
    queries = [i for i, c in enumerate(env.candidates) if c.kind == "search"]
    obs, r, term, _, info = env.step(queries[0])
    assert term and r == 0.0 and info["answer"] is None and not obs["action_mask"].any()
    with pytest.raises(SteerEnvsError, match="episode has ended"):
        env.step(0)


def test_admissible_set_is_built_from_observations_only():
    """Two tasks that differ only in hidden ground truth get the same candidates and features."""
    env = make().unwrapped
    env.reset(seed=0, options={"task_id": TASK})
    env.step(next(i for i, c in enumerate(env.candidates) if c.kind == "search"))
    s = env.state
    cands = build_candidates(s.task.question, s.searched, s.docs, 8, 24, 7)
    fake = dataclasses.replace(s.task, golden_answers=("Nowhere",), supporting_ids=(), decomposition=())
    assert build_candidates(fake.question, s.searched, s.docs, 8, 24, 7) == cands
    feats = candidate_features(cands, s.task.question, 1, 1, 5)
    assert np.array_equal(feats, candidate_features(cands, fake.question, 1, 1, 5))
    # slots are a seeded shuffle: another seed, same set, another order
    other = build_candidates(s.task.question, s.searched, s.docs, 8, 24, 8)
    assert sorted(c.render() for c in other) == sorted(c.render() for c in cands)
    assert [c.render() for c in other] != [c.render() for c in cands]


def test_candidates_cover_questions_entities_titles_and_spans():
    docs = [
        RetrievedDoc(
            0,
            1,
            "Van Hook Township, Mountrail County, North Dakota",
            "Van Hook Township is a township in Mountrail County, North Dakota, United States. "
            "Its population was 1,032 at the 2000 census.",
        )
    ]
    question = "What is the seat of the county where Van Hook Township is located?"
    cands = build_candidates(question, [question], docs, 8, 24, 0)
    kinds = {(c.kind, c.text) for c in cands}
    assert ("search", "Van Hook Township") in kinds and ("answer", "Mountrail County") in kinds
    assert ("answer", "1,032") in kinds and ("answer", "yes") in kinds and ("answer", "no") in kinds
    assert ("search", question.rstrip("?")) not in kinds  # already searched


# -- the option list: shared fields defined once, the plan options, unknown keywords ---------------------------
def _episode(env, seed, options=None):
    """The observations, rewards and infos of a seeded episode that takes the first admissible action each step."""
    obs, info = env.reset(seed=seed, options=options)
    out = [obs["prompt"], obs["transcript"], obs["features"].tolist(), info["plan_k"], info["reference_length"]]
    for _ in range(8):
        obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        out += [obs["transcript"], obs["features"].tolist(), reward, info["env_steps"]]
        if terminated or truncated:
            break
    return out


def test_the_reset_options_choose_the_plan_and_an_unknown_one_is_refused():
    env = make(
        plan_k=2, plan_mode="prefix", plan_sources=("gold",), plan_noise=0.3, plan_noise_seed=4, plan_answers=False
    ).unwrapped
    assert _episode(env, 3)[3] > 0  # the plan is used (k > 0)
    by_option = _episode(env, 5, {"task_id": TASK, "plan_k": 1, "plan_mode": "prompt"})
    assert by_option[3] == 1  # k=1, not the env's plan_k=2
    assert by_option != _episode(env, 5, {"task_id": TASK, "plan_mode": "prompt"})  # which k counts
    with pytest.raises(UnknownOptionError, match=r"no option 'guidance_k'; its options: task_id, plan_k"):
        env.reset(seed=5, options={"task_id": TASK, "guidance_k": 1})
    with pytest.raises(UnknownOptionError, match="'guidance_k'"):
        make(guidance_k=1)


def test_an_unknown_keyword_is_an_error_naming_the_valid_options():
    with pytest.raises(UnknownOptionError) as raised:
        make(plan_kk=2)
    message = str(raised.value)
    assert "'plan_kk'" in message and "did you mean 'plan_k'" in message
    for name in GuidedSearchConfig.option_names():
        assert name in message
    with pytest.raises(UnknownOptionError, match="'executor'"):  # a supervision env's option is not one here
        make(executor="sim:default")


def test_the_shared_options_are_one_definition_with_guided_search_defaults():
    shared = {f.name: f for f in dataclasses.fields(SearchTaskConfig)}
    guided = {f.name: f for f in dataclasses.fields(GuidedSearchConfig)}
    supervision = {f.name: f for f in dataclasses.fields(EnvConfig)}
    assert set(shared) <= set(guided) and set(shared) <= set(supervision)
    for name in set(shared) - {"action_mode"}:  # action_mode means another index in each: its own doc
        assert guided[name].metadata["doc"] == supervision[name].metadata["doc"] == shared[name].metadata["doc"]
    assert (guided["max_turns"].default, guided["metric"].default) == (6, "em")
    assert (supervision["max_turns"].default, supervision["metric"].default) == (10, "f1")
    env = make().unwrapped
    assert env.option_docs == GuidedSearchConfig.option_docs() and all(env.option_docs.values())
    assert env.config_class is GuidedSearchConfig and env.config.render_mode is None
