"""The suite writes only under ``$STEER_ENVS_CACHE`` and temporary folders, never beside the user's home.

A child pytest runs :func:`test_side_effect_probe` (the parts of the stack that write on their own: onnxruntime's
device-id file, matplotlib's font cache, Stable-Baselines3's logger folders, the index cache of a CLI command)
with an empty ``HOME``; the home folder must still be empty afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_side_effect_probe(tmp_path, capsys):
    """Not a check by itself: what the child run of the next test exercises."""
    pytest.importorskip("onnxruntime")  # writes a device-id file under $XDG_CACHE_HOME (else ~/.cache) on import
    import gymnasium as gym
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from stable_baselines3 import PPO

    from steer_envs.cli.main import main

    fig = plt.figure()
    fig.savefig(tmp_path / "plot.png")
    plt.close(fig)
    PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, batch_size=32, n_epochs=1, device="cpu").learn(64)
    assert main(["search", "danube delta", "-k", "1"]) == 0
    assert "danube" in capsys.readouterr().out.lower()


def test_the_suite_writes_nothing_in_the_home_folder(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR", "SB3_LOGDIR", "PYTHONPATH")
    }
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore",
            f"{Path(__file__).relative_to(ROOT)}::test_side_effect_probe",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert written == [], f"the suite wrote into the home folder: {written[:10]}"
