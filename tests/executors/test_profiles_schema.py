"""The one profile loader (steer_envs.executors.profiles) for the simulator and the pipeline: both reject a
boolean where a number is expected, name the key and the file, and load every shipped profile."""

from __future__ import annotations

import json

import pytest

from steer_envs.errors import SteerEnvsError
from steer_envs.executors.pipeline.profile import PROFILE_DIR as PIPELINE_DIR
from steer_envs.executors.pipeline.profile import load_pipeline_profile
from steer_envs.executors.pipeline.profile import shipped_profiles as pipeline_profiles
from steer_envs.executors.sim.profile import PROFILE_DIR as SIM_DIR
from steer_envs.executors.sim.profile import load_profile, shipped_profiles

LOADERS = [("simulator", SIM_DIR, load_profile), ("pipeline", PIPELINE_DIR, load_pipeline_profile)]


def _write(tmp_path, directory, **changes):
    obj = json.loads((directory / "default.json").read_text(encoding="utf-8"))
    obj.update(changes)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_every_shipped_profile_loads():
    assert {load_profile(n).name for n in shipped_profiles()} == set(shipped_profiles())
    assert {load_pipeline_profile(n).name for n in pipeline_profiles()} == set(pipeline_profiles())


@pytest.mark.parametrize("kind,directory,load", LOADERS)
@pytest.mark.parametrize("value", [True, False])
def test_boolean_probability_is_rejected_naming_key_and_file(tmp_path, kind, directory, load, value):
    path = _write(tmp_path, directory, compliance=value)
    with pytest.raises(SteerEnvsError) as err:
        load(str(path))
    message = str(err.value)
    assert f"{kind} profile {path}" in message and "'compliance'" in message and "boolean" in message


@pytest.mark.parametrize("kind,directory,load", LOADERS)
def test_boolean_in_benchmark_override_is_rejected(tmp_path, kind, directory, load):
    path = _write(tmp_path, directory, benchmarks={"popqa": {"parametric_recall": True}})
    with pytest.raises(SteerEnvsError, match=r"mine\.json \(benchmarks\.popqa\): 'parametric_recall' must be a number"):
        load(str(path))


def test_simulator_boolean_positive_number_and_integer_rejected(tmp_path):
    with pytest.raises(SteerEnvsError, match="'plan_effect' must be a number, got the boolean true"):
        load_profile(str(_write(tmp_path, SIM_DIR, plan_effect=True)))
    with pytest.raises(SteerEnvsError, match="'intervention_turn_cost' must be a number"):
        load_profile(str(_write(tmp_path, SIM_DIR, intervention_turn_cost=False)))
    with pytest.raises(SteerEnvsError, match=r"'intervention_turn_cost' must be an integer >= 0, got -1"):
        load_profile(str(_write(tmp_path, SIM_DIR, intervention_turn_cost=-1)))
    with pytest.raises(SteerEnvsError, match=r"'drift_weights.fixation' must be a non-negative number, got True"):
        load_profile(str(_write(tmp_path, SIM_DIR, drift_weights={"fixation": True})))


def test_pipeline_integer_and_range_errors(tmp_path):
    with pytest.raises(SteerEnvsError, match="'max_rounds' must be a positive integer, got 0"):
        load_pipeline_profile(str(_write(tmp_path, PIPELINE_DIR, max_rounds=0)))
    with pytest.raises(SteerEnvsError, match=r"'strict_fail' must be a probability in \[0, 1\], got 1.5"):
        load_pipeline_profile(str(_write(tmp_path, PIPELINE_DIR, strict_fail=1.5)))


@pytest.mark.parametrize("kind,directory,load", LOADERS)
def test_unknown_key_and_missing_file(tmp_path, kind, directory, load):
    with pytest.raises(SteerEnvsError, match=r"unknown key\(s\) complience.*Valid keys:"):
        load(str(_write(tmp_path, directory, complience=0.5)))
    with pytest.raises(SteerEnvsError, match=f"{kind} profile file .*nope.json.* does not exist"):
        load(str(tmp_path / "nope.json"))


def test_simulator_missing_required_key(tmp_path):
    obj = json.loads((SIM_DIR / "default.json").read_text(encoding="utf-8"))
    del obj["compliance"]
    path = tmp_path / "short.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(SteerEnvsError, match=r"missing key\(s\) compliance"):
        load_profile(str(path))
