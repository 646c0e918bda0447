"""GuidedSearch-v0: conformance (check_env, determinism, pickling, forks, vectorisation), guidance in the prompt
and as an executed prefix, the unguided view in info, and the admissible set's observability rule."""
from __future__ import annotations

import dataclasses
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import steer_envs  # noqa: F401
from steer_envs.envs.admissible import FEATURE_NAMES, HINT_COLUMNS, RetrievedDoc, build_candidates, candidate_features
from steer_envs.errors import InvalidActionError, SteerEnvsError
from steer_envs.guidance import HINT_HEADER

ENV_ID = "steer_envs/GuidedSearch-v0"
TASK = "musique/2hop__574419_270105"


def make(mode="discrete", **kw):
    return gym.make(ENV_ID, action_mode=mode, **{"split": "train", "benchmarks": ["musique", "nq"], **kw})


def play(env, seed, actions=None, n=6, options=None):
    """(obs, reward, terminated) trace; discrete actions default to the first filled slots, seeded."""
    obs, info = env.reset(seed=seed, options=options)
    rng = np.random.default_rng(seed)
    trace = [(obs["transcript"], 0.0, False)]
    for i in range(n):
        if actions is not None:
            a = actions[i]
        else:
            a = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, r, term, trunc, info = env.step(a)
        trace.append((obs["transcript"], r, term))
        if term:
            break
    return trace


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_check_env(mode):
    env = make(mode)
    check_env(env.unwrapped, skip_render_check=True)


def test_determinism_and_different_seeds_differ():
    a, b = make(), make()
    for seed in range(3):
        assert play(a, seed) == play(b, seed)
    assert len({str(play(a, s)) for s in range(6)}) > 1


def test_pickle_round_trip_mid_episode():
    env = make()
    env.reset(seed=4, options={"task_id": TASK})
    env.step(0)
    clone = pickle.loads(pickle.dumps(env))
    assert len(pickle.dumps(env)) < 2_000_000
    assert play_from(clone) == play_from(env)


def play_from(env, n=5):
    out = []
    for _ in range(n):
        if env.unwrapped.state.done:
            break
        obs, r, term, _, _ = env.step(int(np.flatnonzero(env.unwrapped._observation()["action_mask"])[-1]))
        out.append((obs["transcript"], r, term))
    return out


def test_fork_and_get_set_state():
    env = make().unwrapped
    env.reset(seed=1, options={"task_id": TASK})
    env.step(0)
    state = env.get_state()
    fork = env.fork()
    first = play_from(fork)
    assert env.get_state()["episode"].transcript == state["episode"].transcript  # the original did not move
    assert play_from(env) == first
    env.set_state(state)
    assert play_from(env) == first


def test_prompt_hint_and_unguided_view():
    env = make().unwrapped
    obs, info = env.reset(seed=0, options={"task_id": TASK, "guidance_k": 2})
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
    obs, info = env.reset(seed=0, options={"task_id": TASK, "guidance_k": 3, "guidance_mode": "prefix"})
    assert HINT_HEADER not in obs["prompt"]
    assert obs["transcript"].count("<search>") == 2 and "<answer>" not in obs["transcript"]
    assert info["env_steps"] == 2 and info["prefix_executed"] == 3 and not env.state.done
    assert info["unguided_observation"]["transcript"] == obs["transcript"]
    # the state after the prefix equals the state reached by advancing a k=0 episode over the same reference
    other = make().unwrapped
    other.reset(seed=0, options={"task_id": TASK, "guidance_mode": "prefix"})
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
    with pytest.raises(SteerEnvsError, match="guidance_k"):
        make(guidance_k=-1)
    with pytest.raises(SteerEnvsError, match="guidance_mode"):
        make(guidance_mode="assistant")
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
    docs = [RetrievedDoc(0, 1, "Van Hook Township, Mountrail County, North Dakota",
                         "Van Hook Township is a township in Mountrail County, North Dakota, United States. "
                         "Its population was 1,032 at the 2000 census.")]
    question = "What is the seat of the county where Van Hook Township is located?"
    cands = build_candidates(question, [question], docs, 8, 24, 0)
    kinds = {(c.kind, c.text) for c in cands}
    assert ("search", "Van Hook Township") in kinds and ("answer", "Mountrail County") in kinds
    assert ("answer", "1,032") in kinds and ("answer", "yes") in kinds and ("answer", "no") in kinds
    assert ("search", question.rstrip("?")) not in kinds  # already searched


def test_make_vec_sync():
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync", split="train", benchmarks=["nq"])
    obs, infos = envs.reset(seed=0)
    assert obs["features"].shape == (2, 32, len(FEATURE_NAMES))
    obs, rewards, term, trunc, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert rewards.shape == (2,)
    envs.close()
