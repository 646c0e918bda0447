"""``AnswerabilityReader``: the reader's judgement of the latest retrieved documents, for any policy.

After every ``reset`` and ``step`` the wrapper reads the observation as a policy would (the latest
``<information>`` block on SearchSteering-v0, the facts of the latest searcher hand-off on HandoffSteering-v0),
scores each document with an :class:`~steer_envs.reader.AnswerabilityModel` (P(it holds a gold answer)) and puts
the scores in ``info["reader"]``: ``{"scores": [...], "max": float, "documents": int}`` (``max`` is 0 before the
first retrieval). With ``observation_key`` set, the observation dict also gets that key: a
``Box(0, 1, (max_documents,))`` of the scores in rank order, zero-padded, so a learner that reads only
observations sees it too. Nothing privileged is read: the same scores are computable from the observation alone.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ..errors import SteerEnvsError


class AnswerabilityReader(gym.Wrapper):
    """Add the reader's scores for the latest retrieved documents to ``info`` (and optionally the observation)."""

    def __init__(
        self, env: gym.Env, reader: Any = None, observation_key: str | None = None, max_documents: int = 5
    ) -> None:
        super().__init__(env)
        from ..reader import AnswerabilityModel, ReaderConfig, shared_reader

        if reader is None or isinstance(reader, ReaderConfig):
            reader = shared_reader(reader)
        if not isinstance(reader, AnswerabilityModel):
            raise SteerEnvsError(
                f"reader must be an AnswerabilityModel, a ReaderConfig or None (the default reader), "
                f"got {type(reader).__name__}"
            )
        if max_documents < 1:
            raise SteerEnvsError(f"max_documents must be at least 1, got {max_documents}")
        self.reader = reader
        self.observation_key = observation_key
        self.max_documents = max_documents
        if observation_key is not None:
            space = env.observation_space
            if not isinstance(space, gym.spaces.Dict):
                raise SteerEnvsError(
                    f"observation_key needs a Dict observation space, got {space}; leave "
                    "observation_key=None to get the scores in info only"
                )
            if observation_key in space.spaces:
                raise SteerEnvsError(f"the observation already has a key {observation_key!r}; choose another name")
            self.observation_space = gym.spaces.Dict(
                {**space.spaces, observation_key: gym.spaces.Box(0.0, 1.0, (max_documents,), np.float32)}
            )

    def _read(self, observation: Any, info: dict) -> Any:
        scores = self.reader.score_observation(observation)
        info["reader"] = {
            "scores": [float(s) for s in scores],
            "max": float(scores.max()) if len(scores) else 0.0,
            "documents": int(len(scores)),
        }
        if self.observation_key is None:
            return observation
        padded = np.zeros(self.max_documents, dtype=np.float32)
        padded[: min(len(scores), self.max_documents)] = scores[: self.max_documents]
        return {**observation, self.observation_key: padded}

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        info = dict(info)
        return self._read(observation, info), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        return self._read(observation, info), reward, terminated, truncated, info
