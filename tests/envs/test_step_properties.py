"""Every registered env's ``step`` in text mode on hostile notes (any unicode, control characters, lone
surrogates, tag soup, a megabyte): never a crash, never a hang, always a defined result (an observation in the
observation space, a finite reward, an info dict); a non-string action is a clear InvalidActionError."""

from __future__ import annotations

import dataclasses
import inspect
import math

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steer_envs.data import f1
from steer_envs.envs.cards import registered_ids
from steer_envs.errors import InvalidActionError
from tests.hostile import hostile_text, megabyte_text
from tests.timing import cpu_seconds_under

ENV_IDS = registered_ids()


def _text_env(env_id: str):
    creator = gym.registry[env_id].entry_point
    from steer_envs.registry import import_object

    cls = import_object(creator) if isinstance(creator, str) else creator
    params = set(inspect.signature(cls.__init__ if inspect.isclass(cls) else cls).parameters)
    config_class = getattr(cls, "config_class", None)  # envs taking **options declare them on their config
    if config_class is not None:
        params |= {f.name for f in dataclasses.fields(config_class)}
    if "action_mode" not in params:
        pytest.skip(f"{env_id} has no text action mode")
    kwargs = {k: v for k, v in {"split": "dev", "max_turns": 4}.items() if k in params}
    env = gym.make(env_id, action_mode="text", **kwargs)
    if not isinstance(env.action_space, gym.spaces.Text):
        pytest.skip(f"{env_id}'s text mode does not take strings")
    _play(env, ["Verify the evidence before answering."], seed=0)  # lazy resources (index, note reader) load here
    return env


def _play(env, notes: list[str], seed: int) -> None:
    obs, info = env.reset(seed=seed)
    assert env.observation_space.contains(obs) and isinstance(info, dict)
    for i in range(64):
        obs, reward, terminated, truncated, info = env.step(notes[i % len(notes)])
        assert env.observation_space.contains(obs), "the observation left its space"
        assert isinstance(reward, float) and math.isfinite(reward) and isinstance(info, dict)
        if terminated or truncated:
            assert "f1" in info, f"the episode ended without an f1 in info: {sorted(info)}"
            # the F1 is the answer's, against the golden answers of the task the info names
            task = next(t for t in env.unwrapped.tasks if t.id == info["task_id"])
            assert info["f1"] == pytest.approx(f1(info["answer"] or "", task.golden_answers)), (
                info["answer"],
                task.golden_answers,
            )
            return
    raise AssertionError("no episode end after 64 steps of notes")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_any_notes_give_a_defined_episode(env_id, shared_data_dir):
    env = _text_env(env_id)

    @settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(hostile_text, min_size=1, max_size=3), st.integers(0, 2**31 - 2))
    def run(notes, seed):
        _play(env, notes, seed)

    run()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_megabyte_note_is_a_defined_step_in_bounded_time(env_id, shared_data_dir):
    env = _text_env(env_id)

    @settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(megabyte_text)
    def run(note):
        with cpu_seconds_under(30, typical_s=0.3):
            _play(env, [note], seed=1)

    run()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_non_string_actions_in_text_mode_are_clear_errors(env_id, shared_data_dir):
    env = _text_env(env_id)

    @settings(max_examples=20)
    @given(st.one_of(st.integers(), st.none(), st.floats(), st.binary(max_size=8), st.lists(st.text(max_size=3))))
    def run(action):
        env.reset(seed=0)
        with pytest.raises(InvalidActionError, match="text action must be a str"):
            env.step(action)

    run()
