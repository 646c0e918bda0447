"""The ``skill_chain`` task family of GuidedSearch-v0: built deterministically, its reference plans show the skill,
success needs the skill (an episode that never carries both links into its searches cannot answer right; one that
does succeeds), and the env's observation and action spaces, and its real tasks' episodes, are unchanged."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401  (registers the env ids)
from steer_envs.envs.admissible import content_words
from steer_envs.errors import SteerEnvsError
from steer_envs.ids import GUIDED_SEARCH_ENV
from steer_envs.reference_plans.records import ANSWER, SEARCH
from steer_envs.task_families import get_task_family
from steer_envs.task_families.skill_chain import SPLIT_SIZES, SkillChainFamily, link_sentences


def make(**options):
    return gym.make(GUIDED_SEARCH_ENV, **options).unwrapped


def family_env(split: str = "test", **options):
    return make(split=split, task_family="skill_chain", benchmarks=("skill_chain",), **options)


def index_of(env, kind: str, text: str) -> int | None:
    for i, c in enumerate(env.candidates):
        if c.kind == kind and c.text.lower() == text.lower():
            return i
    return None


def test_family_is_built_deterministically_with_unique_names():
    a, b = SkillChainFamily(), SkillChainFamily()
    assert list(a.chains) == list(b.chains)
    for task_id, chain in a.chains.items():
        other = b.chains[task_id]
        assert chain.task == other.task and chain.passages == other.passages and chain.plan == other.plan
    for split, size in SPLIT_SIZES.items():
        assert len(a.tasks(split)) == size and all(t.split == split for t in a.tasks(split))
    people = [c.person for c in a.chains.values()]
    answers = [c.answer for c in a.chains.values()]
    assert len(set(people)) == len(people) and len(set(answers)) == len(answers)
    assert get_task_family("skill_chain") is get_task_family("skill_chain")


def test_reference_plans_show_the_skill():
    for chain in SkillChainFamily().chains.values():
        plan = chain.plan
        assert [a.name for a in plan.actions] == [SEARCH, SEARCH, SEARCH, ANSWER]
        assert [a.text for a in plan.actions] == [chain.person, chain.link1, chain.link2, chain.answer]
        assert plan.source.startswith("gold:")
        first, second = link_sentences(chain)
        assert chain.link1 in first and chain.link2 in second
        question = content_words(chain.task.question)
        assert not question & content_words(first) and not question & content_words(second)
        holders = [p.id for p in chain.passages if chain.answer in p.text]
        assert holders == [chain.passages[4].id]  # the answer is in the second link's document only


def test_following_the_plan_succeeds():
    env = family_env()
    family = env.family
    for task in env.tasks[:10]:
        env.reset(seed=0, options={"task_id": task.id})
        plan = family.reference(task.id)
        reward = 0.0
        for action in plan.actions:
            index = index_of(env, action.name, action.text)
            assert index is not None, f"{task.id}: {action} is not admissible"
            _, reward, done, _, _ = env.step(index)
        assert done and reward == 1.0


def test_without_the_skill_no_episode_can_answer_right():
    """Every search but the second link's, in random order, never puts the answer among the candidates."""
    env = family_env()
    rng = np.random.default_rng(0)
    for task in env.tasks[:12]:
        chain = env.family.chains[task.id]
        for episode in range(6):
            env.reset(seed=episode, options={"task_id": task.id})
            while not env.state.done and env.state.turns < env.config.max_turns - 1:
                assert index_of(env, ANSWER, chain.answer) is None
                searches = [
                    i
                    for i, c in enumerate(env.candidates)
                    if c.kind == SEARCH and c.text.lower() != chain.link2.lower()
                ]
                if not searches:
                    break
                env.step(int(rng.choice(searches)))
            assert index_of(env, ANSWER, chain.answer) is None


def test_spaces_and_real_tasks_are_unchanged():
    plain = make(split="dev")
    with_family = make(split="dev", task_family="skill_chain")
    assert plain.observation_space == with_family.observation_space
    assert plain.action_space == with_family.action_space
    real = plain.tasks[0].id
    assert real in {t.id for t in with_family.tasks}
    assert len(with_family.tasks) == len(plain.tasks) + SPLIT_SIZES["dev"]
    for env in (plain, with_family):
        env.reset(seed=3, options={"task_id": real})
    for _step in range(3):
        a, b = plain._observation(), with_family._observation()
        assert a["candidates"] == b["candidates"] and a["transcript"] == b["transcript"]
        assert np.array_equal(a["features"], b["features"])
        if plain.state.done:
            break
        plain.step(0)
        with_family.step(0)


def test_family_options():
    with pytest.raises(SteerEnvsError):
        make(split="dev", task_family="no_such_family")
    ids = ("skill_chain-dev-0003",)
    env = make(split="dev", task_family="skill_chain", task_ids=ids)
    assert [t.id for t in env.tasks] == list(ids)
    assert not make(split="dev", task_family="skill_chain", benchmarks=("nq",)).family.owns("nq/0")
    assert all(t.benchmark == "nq" for t in make(split="dev", task_family="skill_chain", benchmarks=("nq",)).tasks)
    noisy = family_env(plan_noise=1.0)
    chain = noisy.family.chains[noisy.tasks[0].id]
    texts = [a.text for a in noisy.reference_for(chain.task.id).actions]
    assert set(texts) <= set(chain.decoys)


def test_hint_and_prefix_carry_the_skill():
    env = family_env(plan_mode="prefix")
    task = env.tasks[0]
    chain = env.family.chains[task.id]
    env.reset(seed=0, options={"task_id": task.id, "plan_k": 3})
    assert env.state.searched == [chain.person, chain.link1, chain.link2]
    assert index_of(env, ANSWER, chain.answer) is not None
    prompt_env = family_env(plan_k=2)
    obs, _ = prompt_env.reset(seed=0, options={"task_id": task.id})
    assert chain.link1 in obs["prompt"] and chain.link2 not in obs["prompt"]
