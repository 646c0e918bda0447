"""ACTGUIDE reference plans under their own name (issue 20, step 6): ``steer_envs.reference_plans`` and
``ReferencePlanHint`` are the primary names; the old "guidance" names are the same objects and keep working."""
from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401
from steer_envs import guidance, reference_plans
from steer_envs.wrappers import ActionGuidance, ReferencePlanHint

KW = {"split": "train", "benchmarks": ["musique"]}


def test_new_names_are_the_old_objects():
    assert reference_plans.ReferencePlan is guidance.ReferenceSequence
    assert reference_plans.PlanAction is guidance.GuidanceAction
    assert reference_plans.ReferencePlans is guidance.ActionData
    assert reference_plans.load_reference_plans is guidance.load_action_data
    assert reference_plans.format_plan_hint is guidance.format_hint
    assert reference_plans.ReferencePlanHint is ReferencePlanHint
    assert set(reference_plans.__all__) <= set(dir(reference_plans))


def test_the_old_wrapper_name_warns_and_gives_the_same_episodes():
    new = ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", **KW), k=2)
    with pytest.warns(DeprecationWarning, match="ReferencePlanHint"):
        old = ActionGuidance(gym.make("steer_envs/GuidedSearch-v0", **KW), k=2)
    (obs_new, info_new), (obs_old, info_old) = new.reset(seed=4), old.reset(seed=4)
    assert obs_new["prompt"] == obs_old["prompt"] and info_new["plan_k"] == info_old["plan_k"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", **KW))  # the primary name does not warn
