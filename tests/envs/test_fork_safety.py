"""Forked workers after torch ran in the parent: an async ``make_vec`` env must not hang.

Once the parent has run a parallel torch op (a steerer, the note reader), a forked child's first parallel op
waits forever on the parent's OpenMP thread team; ``import steer_envs`` registers an at-fork hook that makes
forked workers single-threaded. Run in a fresh interpreter, with a deadline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import gymnasium as gym, torch
import steer_envs
torch.set_num_threads(2)
x = torch.randn(1500, 1500)
(x @ x).sum()  # the parent runs a parallel region: its OpenMP team now exists
envs = gym.make_vec("steer_envs/SearchSteering-v0", num_envs=2, vectorization_mode="async",
                    vector_kwargs={"shared_memory": False, "context": "fork"}, split="dev", action_mode="text")
envs.reset(seed=0)
envs.step(("Stop repeating searches you have already made.", "Verify the evidence before answering."))
envs.close()
print("stepped")
"""


def test_async_workers_forked_after_torch_ran_do_not_hang(shared_data_dir):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the hung workers too
        proc.communicate()
        raise AssertionError("a forked async env worker hung (OpenMP team inherited from the parent)") from None
    assert proc.returncode == 0 and "stepped" in out, err[-2000:]
