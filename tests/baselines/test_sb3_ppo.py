"""SB3 PPO through the feature wrapper learns something real: after a fixed budget it beats passing on dev F1."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from baselines.registry import MethodContext, build_policy
from baselines.simple import NoSupervision
from benchmarks.harness.runner import run_episode
from steer_envs.data import load_tasks
from steer_envs.episodes import episode_seed

BENCHMARKS = ("nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa")


def _dev_f1(context, policy, task_ids):
    env = context.make_env(split="dev", task_ids=task_ids)
    scores = [run_episode(env, policy, episode_seed(t, 0), t, "m", 0).f1 for t in task_ids]
    return float(np.mean(scores))


@pytest.mark.slow
def test_ppo_beats_the_pass_policy_on_dev_after_a_fixed_budget(tmp_path):
    torch.set_num_threads(1)
    sb3_folders = set(Path(tempfile.gettempdir()).glob("SB3-*"))
    context = MethodContext(benchmarks=BENCHMARKS, workdir=tmp_path / "ppo", progress=False)
    policy = build_policy("sb3_ppo:timesteps=4000", context)
    assert (tmp_path / "ppo" / "ppo_model.zip").is_file()
    assert set(Path(tempfile.gettempdir()).glob("SB3-*")) == sb3_folders  # SB3's default logger folder: none left
    dev = [t.id for b in BENCHMARKS for t in load_tasks(b, "dev")[:16]]
    ppo_f1 = _dev_f1(context, policy, dev)
    pass_f1 = _dev_f1(context, NoSupervision(), dev)
    assert ppo_f1 > pass_f1 + 0.02, (ppo_f1, pass_f1)
    # the checkpoint is reused: building again does not retrain, and acts identically
    again = build_policy("sb3_ppo:timesteps=4000", context)
    assert _dev_f1(context, again, dev[:10]) == _dev_f1(context, policy, dev[:10])
