"""ACTGUIDE reference plans have one home, ``steer_envs.reference_plans``, and one name each; the wrapper that
shows them is ``steer_envs.wrappers.ReferencePlanHint``, and the CLI command is ``steer-envs reference-plans``."""

from __future__ import annotations

import importlib

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401
from steer_envs import reference_plans, wrappers
from steer_envs.cli.main import build_parser
from steer_envs.envs.base import UnknownOptionError

KW = {"split": "train", "benchmarks": ["musique"]}


def test_one_home_and_one_name():
    assert set(reference_plans.__all__) <= set(dir(reference_plans))
    for module in ("steer_envs.guidance", "steer_envs.deprecation", "steer_envs.wrappers.guidance"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(module)
    assert not hasattr(wrappers, "ActionGuidance")
    parser = build_parser()
    assert parser.parse_args(["reference-plans", "coverage"]).command == "reference-plans"
    with pytest.raises(SystemExit):
        parser.parse_args(["guidance", "coverage"])


def test_the_plan_options_have_one_name():
    env = wrappers.ReferencePlanHint(gym.make("steer_envs/GuidedSearch-v0", **KW), k=2)
    _, info = env.reset(seed=4)
    assert info["plan_k"] == 2 and "guidance_k" not in info
    with pytest.raises(UnknownOptionError, match="'guidance_mode'"):
        gym.make("steer_envs/GuidedSearch-v0", guidance_mode="prefix", **KW)
