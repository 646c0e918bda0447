"""Fixed-size numeric observations for the text environments (the Stable-Baselines3 bridge).

Why hashing: the vocabulary of goals and transcripts is open, and an SB3 policy needs a fixed-size vector.
The feature-hashing trick maps words and word bigrams into ``buckets`` slots with a *stable* hash (CRC32, not
Python's salted ``hash``), so the same observation gives the same vector in every process. Separate blocks
for the goal, the whole transcript and the latest turn let a linear layer tell "the question mentions X" from
"the agent keeps searching X". Counters add what hashing blurs and what drift looks like: turn, interventions,
searches, repeated and distinct queries, invalid actions, answer overlap with retrieved text.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from ..errors import SteerEnvsError
from ..executors.protocol import INFORMATION_TAGS, searched_queries, tag_spans
from ..text import FEATURE_STOP_WORDS as _STOP
from ..text import query_key, strip_tags, words

COUNTER_NAMES: tuple[str, ...] = (
    "turn",
    "interventions",
    "searches",
    "repeated_queries",
    "distinct_queries",
    "last_query_repeated",
    "invalid_actions",
    "guidance_notes",
    "information_blocks",
    "goal_words_in_information",
    "transcript_length",
    "turns_since_new_query",
)


def _words(text: str) -> list[str]:
    return words(strip_tags(text))


_normalise_query = query_key


@dataclass(frozen=True)
class TextFeaturizer:
    """Turns ``(goal, transcript, turn, interventions)`` into a float32 vector in [0, 1]."""

    buckets: int = 256
    max_turns: int = 10

    @property
    def size(self) -> int:
        return 3 * self.buckets + len(COUNTER_NAMES)

    def _hashed(self, words: list[str]) -> np.ndarray:
        vec = np.zeros(self.buckets, dtype=np.float32)
        grams = words + [f"{a}_{b}" for a, b in zip(words, words[1:])]
        for gram in grams:
            vec[zlib.crc32(gram.encode()) % self.buckets] += 1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def counters(self, goal: str, transcript: str, turn: int, interventions: int) -> np.ndarray:
        queries = [_normalise_query(q) for q in searched_queries(transcript)]
        distinct = len(set(queries))
        repeated = len(queries) - distinct
        since_new = 0
        seen: set[str] = set()
        for q in queries:
            since_new = since_new + 1 if q in seen else 0
            seen.add(q)
        info_text = " ".join(transcript[b.start : b.end] for b in tag_spans(transcript, INFORMATION_TAGS))
        goal_words = set(_words(goal)) - _STOP
        info_words = set(_words(info_text))
        overlap = len(goal_words & info_words) / max(len(goal_words), 1)
        t = float(self.max_turns)
        values = [
            turn / t,
            interventions / t,
            len(queries) / t,
            repeated / t,
            distinct / t,
            1.0 if len(queries) >= 2 and queries[-1] in queries[:-1] else 0.0,
            transcript.count("My previous action is invalid") / t,
            transcript.count("<guidance>") / t,
            transcript.count("<information>") / t,
            overlap,
            min(len(transcript) / 20000.0, 1.0),
            since_new / t,
        ]
        return np.clip(np.asarray(values, dtype=np.float32), 0.0, 1.0)

    def __call__(self, goal: str, transcript: str, turn: int = 0, interventions: int = 0) -> np.ndarray:
        last_turn = transcript[-1500:]
        return np.concatenate(
            [
                self._hashed(_words(goal)),
                self._hashed(_words(transcript)),
                self._hashed(_words(last_turn)),
                self.counters(goal, transcript, turn, interventions),
            ]
        ).astype(np.float32)


def _field(obs: Any, key: str, default: Any) -> Any:
    value = obs.get(key, default) if isinstance(obs, dict) else default
    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else value
    return value


class FeatureObservation(gym.ObservationWrapper):
    """Replace the Dict text observation with a ``Box(0, 1, (3*buckets + counters,))`` float32 vector.

    The action space is left alone: wrap an env made with ``action_mode="discrete"`` to get a ``Discrete``
    action (an index into ``env.unwrapped.catalogue``), which is what SB3 algorithms need.
    """

    def __init__(self, env: gym.Env, buckets: int = 256) -> None:
        super().__init__(env)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise SteerEnvsError(
                f"FeatureObservation needs a Discrete action space, got {env.action_space}; "
                "make the env with action_mode='discrete'"
            )
        max_turns = int(getattr(env.unwrapped, "max_turns", 10) or 10)
        self.featurizer = TextFeaturizer(buckets=buckets, max_turns=max_turns)
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(self.featurizer.size,), dtype=np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        return self.featurizer(
            str(_field(observation, "goal", "")),
            str(_field(observation, "transcript", "")),
            int(_field(observation, "turn", 0)),
            int(_field(observation, "interventions", 0)),
        )
