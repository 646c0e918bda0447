"""The PettingZoo AEC view of the hand-off pipeline: PettingZoo's own api_test, and learning roles that shape the
messages while the rest stay frozen."""

from __future__ import annotations

import warnings

import pytest
from pettingzoo.test import api_test

from steer_envs.envs.handoff_aec import AGENTS, ROLE_MENUS, HandoffPipelineAEC
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.pipeline import NO_ANSWER


@pytest.mark.parametrize("learning", [("steerer",), ("verifier",), ("reader", "steerer"), AGENTS])
@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_pettingzoo_api(learning, mode):
    env = HandoffPipelineAEC(learning=learning, role_action_mode=mode, action_mode=mode, split="test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # text observations are not numpy arrays (api_test only warns)
        api_test(env, num_cycles=100)


def _play(env, choose, seed=0):
    env.reset(seed=seed)
    acted = []
    for agent in env.agent_iter(500):
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        acted.append(agent)
        env.step(choose(agent, obs))
    return acted


def test_a_learning_verifier_decides_and_the_rest_is_frozen():
    env = HandoffPipelineAEC(learning=("verifier",), split="dev")
    assert env.possible_agents == ["verifier"]
    for seed in range(3):
        acted = _play(env, lambda agent, obs: 0, seed)  # always PASS
        p = env.pipeline
        verdicts = [h for h in p.handoffs if h.sender == "verifier"]
        assert acted == ["verifier"] * len(verdicts) and len(verdicts) == 1
        assert verdicts[0].fields["verdict"] == "PASS" and p.handoffs[-1].sender == "summarizer"
        assert p.state.over_rejections == 0


def test_learning_summarizer_abstains_and_scores_zero():
    env = HandoffPipelineAEC(learning=("summarizer", "steerer"), split="dev")
    _play(env, lambda agent, obs: 1 if agent == "summarizer" else 0)
    assert env.pipeline.answer == NO_ANSWER


def test_role_observation_shows_the_inbox_and_the_note():
    env = HandoffPipelineAEC(learning=("searcher", "steerer"), action_mode="text", role_action_mode="text", split="dev")
    env.reset(seed=0)
    assert env.agent_selection == "steerer"
    env.step("Search for: the director of the film")
    assert env.agent_selection == "searcher"
    obs = env.observe("searcher")
    assert "subtasks" in obs["message"] and obs["note"] == "Search for: the director of the film"
    env.step("director of the film")
    assert env.pipeline.handoffs[-1].sender == "searcher" and env.pipeline.state.queries[-1] == "director of the film"


def test_bad_arguments_are_explained():
    with pytest.raises(SteerEnvsError, match="learning must name"):
        HandoffPipelineAEC(learning=("critic",))
    env = HandoffPipelineAEC(learning=("verifier",), split="dev")
    env.reset(seed=0)
    with pytest.raises(SteerEnvsError, match="0..1"):
        env.step(5)
    assert set(ROLE_MENUS) == set(AGENTS) - {"steerer"}
