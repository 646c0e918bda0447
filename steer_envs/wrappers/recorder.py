"""Record finished episodes to a JSONL file: one line per episode with every decision.

Why: offline methods (filtered behaviour cloning) and debugging need what the supervisor saw and did, and a
line per *finished* episode means a killed process never leaves half an episode in the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

_INFO_KEYS = ("f1", "em", "executor_turns", "interventions", "tokens", "task_id", "benchmark", "answer")


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class EpisodeRecorder(gym.Wrapper):
    """Append ``{"seed", "steps": [{"observation", "action", "reward"}], "return", "info"}`` per episode.

    ``keep_observations=False`` stores only actions and rewards (small files for long runs).
    """

    def __init__(self, env: gym.Env, path: str | os.PathLike, keep_observations: bool = True) -> None:
        super().__init__(env)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.keep_observations = keep_observations
        self._steps: list[dict[str, Any]] = []
        self._obs: Any = None
        self._seed: int | None = None
        self.episodes_written = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._steps, self._obs, self._seed = [], obs, seed
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        step = {"action": _jsonable(action), "reward": float(reward)}
        if self.keep_observations:
            step["observation"] = _jsonable(self._obs)
        self._steps.append(step)
        self._obs = obs
        if terminated or truncated:
            record = {
                "seed": self._seed,
                "steps": self._steps,
                "return": sum(s["reward"] for s in self._steps),
                "truncated": bool(truncated),
                "info": {k: _jsonable(info[k]) for k in _INFO_KEYS if k in info},
            }
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
            self.episodes_written += 1
            self._steps = []
        return obs, reward, terminated, truncated, info
