"""Checkpoints hold tensors and plain data only: a crafted checkpoint that would run code is refused with a clear
error (and runs nothing), while real training state (env snapshots, generators, dataclasses) round-trips."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import steer_envs  # noqa: F401
from steer_envs.checkpoints import CheckpointError, load_checkpoint, save_checkpoint, to_plain


class _Payload:
    """Unpickling this calls ``Path.touch(marker)``: stands in for any code a shared checkpoint could run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _malicious(path: Path, marker: Path, **extra) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": {}, "evil": _Payload(marker), **extra}, path)
    return path


def test_a_crafted_checkpoint_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    path = _malicious(tmp_path / "checkpoint.pt", marker)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "refused to open" in message and "could run code" in message and "--trust-this-file" in message
    assert not marker.exists()


def test_a_shared_run_folder_with_a_crafted_model_is_refused_by_every_loader(tmp_path):
    from agents.steering.trainer import load_model
    from baselines.filtered_bc import load_classifier

    marker = tmp_path / "pwned"
    run = tmp_path / "shared_run"
    _malicious(run / "model.pt", marker, kind="encoder", spec={}, options=[], tau=0.5)
    with pytest.raises(CheckpointError, match="refused to open"):
        load_model(run)
    with pytest.raises(CheckpointError, match="delete .* and the method retrains"):
        load_classifier(_malicious(tmp_path / "bc" / "filtered_bc.pt", marker))
    assert not marker.exists()


def test_a_crafted_sb3_zip_is_refused(tmp_path):
    from baselines.registry import MethodContext
    from baselines.sb3_ppo import load_ppo

    marker = tmp_path / "pwned"
    buffer = io.BytesIO()
    torch.save({"evil": _Payload(marker)}, buffer)
    path = tmp_path / "ppo_model.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("policy.pth", buffer.getvalue())
        archive.writestr("data", pickle.dumps(_Payload(marker)))
    with pytest.raises(CheckpointError, match="refused to open .* delete it"):
        load_ppo(path, MethodContext(benchmarks=("nq",)), seed=0, buckets=16)
    assert not marker.exists()


def test_plain_data_naming_a_foreign_class_is_refused(tmp_path):
    path = tmp_path / "c.pt"
    tree = json.dumps({"__t__": "object", "cls": "subprocess:Popen", "fields": {"args": ["true"]}}).encode()
    torch.save(
        {"__steer_envs_checkpoint__": 1, "tensors": [], "tree": torch.frombuffer(bytearray(tree), dtype=torch.uint8)},
        path,
    )
    with pytest.raises(CheckpointError, match="outside steer_envs .* refused"):
        load_checkpoint(path)


def test_values_outside_plain_data_fail_at_save_time_with_the_reason(tmp_path):
    with pytest.raises(CheckpointError, match="state_dict"):
        save_checkpoint({"model": torch.nn.Linear(2, 2)}, tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match="cannot store a builtins.function"):
        to_plain({"f": lambda x: x})
    assert not (tmp_path / "m.pt").exists()


def test_env_snapshots_round_trip_and_continue_identically(tmp_path, shared_data_dir):
    env = gym.make("steer_envs/SearchSteering-v0", split="dev", benchmarks=["hotpotqa"], max_turns=6)
    for seed in range(20):  # a task whose episode is still running after one turn
        env.reset(seed=seed)
        if not env.step(0)[2]:
            break
    state = env.unwrapped.get_state()
    save_checkpoint(
        {
            "state": state,
            "rng": np.random.default_rng(5),
            "arr": np.arange(4.0),
            "pair": (1, "a"),
            "ids": {"b", "a"},
            "t": torch.arange(3),
        },
        tmp_path / "s.pt",
    )
    back = load_checkpoint(tmp_path / "s.pt")
    assert back["pair"] == (1, "a") and back["ids"] == {"a", "b"} and torch.equal(back["t"], torch.arange(3))
    assert back["arr"].dtype == np.float64 and back["rng"].random() == np.random.default_rng(5).random()

    def finish(e):
        done, steps = False, []
        while not done:
            obs, reward, terminated, truncated, info = e.step(0)
            steps.append((obs["transcript"], reward))
            done = terminated or truncated
        return steps, info["f1"]

    twin = gym.make("steer_envs/SearchSteering-v0", split="dev", benchmarks=["hotpotqa"], max_turns=6)
    twin.reset(seed=99)
    twin.unwrapped.set_state(back["state"])
    assert finish(twin) == finish(env)


def test_legacy_pickle_checkpoints_convert_only_when_trusted(tmp_path):
    path = tmp_path / "checkpoint.pt"
    torch.save({"next_round": 2, "weights": torch.ones(2)}, path)  # what earlier versions wrote: a full pickle
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    refused = subprocess.run(
        [sys.executable, "-m", "steer_envs.checkpoints", "convert", str(path)], capture_output=True, text=True, env=env
    )
    assert refused.returncode == 2 and "--trust-this-file" in refused.stderr
    done = subprocess.run(
        [sys.executable, "-m", "steer_envs.checkpoints", "convert", str(path), "--trust-this-file"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    back = load_checkpoint(path)
    assert back["next_round"] == 2 and torch.equal(back["weights"], torch.ones(2))
