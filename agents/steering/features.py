"""Observation features for the encoder steerer: hashed n-grams plus a few transcript statistics.

Hashing keeps the featuriser vocabulary-free (nothing to fit, nothing to download) and stable across processes
(CRC32, not Python's salted ``hash``). Features are kept in separate *namespaces* because where an n-gram
occurs matters: a title in the goal, in the latest turn, or anywhere in the transcript means different things
for "should I intervene now". The statistics (turn, searches, repeated queries, overlap of the evidence with the
goal) are what goal drift looks like in a search transcript; they are computed from the observation text only,
never from simulator ground truth.
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from steer_envs.executors.protocol import searched_queries

_WORD = re.compile(r"[a-z0-9]+")
_INFO = re.compile(r"<information>(.*?)</information>", re.S)
_TITLE = re.compile(r"\(Title: (.*?)\)")
_STOP = frozenset(
    "a an the of in on at to for by with from and or is was were are be been what who whom which when where why how "
    "did does do that this as it its his her their s".split()
)

#: names of the dense statistics, in order (documented so a reader can inspect learned weights)
STAT_NAMES: tuple[str, ...] = (
    "turn", "searches", "distinct_query_ratio", "repeated_queries", "last_query_repeated", "last_query_goal_overlap",
    "evidence_goal_overlap", "last_evidence_goal_overlap", "interventions", "has_guidance", "invalid_turns",
    "transcript_len", "turns_since_new_title",
)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOP}


def _bucket(token: str, dim: int) -> int:
    return zlib.crc32(token.encode("utf-8")) % dim


def split_observation(observation: Any) -> tuple[str, str, int, int]:
    """(goal, transcript, turn, interventions) from an env observation dict, or from plain text."""
    if isinstance(observation, Mapping):
        goal = str(observation.get("goal", ""))
        transcript = str(observation.get("transcript", ""))
        turn = int(np.asarray(observation.get("turn", 0)).reshape(-1)[0]) if "turn" in observation else 0
        iv = observation.get("interventions", 0)
        interventions = int(np.asarray(iv).sum()) if iv is not None else 0
        return goal, transcript, turn, interventions
    text = str(observation)
    return "", text, 0, 0


def last_turn(transcript: str) -> str:
    """The latest executor turn: text after the second-to-last ``</information>`` (or the last 600 chars)."""
    ends = [m.end() for m in re.finditer(r"</information>", transcript)]
    start = ends[-2] if len(ends) >= 2 else 0
    return transcript[max(start, len(transcript) - 1500):]


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a) if a else 0.0


def transcript_stats(goal: str, transcript: str, turn: int, interventions: int) -> np.ndarray:
    """The :data:`STAT_NAMES` statistics, each scaled to roughly [0, 1]."""
    queries = [" ".join(words(q)) for q in searched_queries(transcript)]
    n = len(queries)
    distinct = len(set(queries))
    last_repeated = float(n >= 2 and queries[-1] in queries[:-1])
    goal_words = content_words(goal)
    blocks = _INFO.findall(transcript)
    evidence = content_words(" ".join(blocks))
    last_evidence = content_words(blocks[-1]) if blocks else set()
    titles_seen: set[str] = set()
    since_new = 0
    for block in blocks:
        titles = set(_TITLE.findall(block))
        if titles - titles_seen:
            since_new = 0
        else:
            since_new += 1
        titles_seen |= titles
    stats = [
        turn / 10.0,
        n / 10.0,
        distinct / n if n else 1.0,
        (n - distinct) / 5.0,
        last_repeated,
        _overlap(content_words(queries[-1]), goal_words) if n else 0.0,
        _overlap(goal_words, evidence),
        _overlap(goal_words, last_evidence),
        interventions / 3.0,
        float("<guidance>" in transcript),
        transcript.count("My previous action is invalid") / 5.0,
        min(len(transcript), 8000) / 8000.0,
        since_new / 5.0,
    ]
    return np.asarray(stats, dtype=np.float32)


@dataclass(frozen=True)
class HashedFeatures:
    """Sparse bucket ids (with counts) plus dense statistics for one observation."""

    ids: np.ndarray  # int64 bucket ids
    weights: np.ndarray  # float32, log(1 + count)
    stats: np.ndarray  # float32, len(STAT_NAMES)


class HashedNgramFeaturizer:
    """Word 1-2-grams of the goal, the latest turn and the whole transcript, hashed into ``dim`` buckets."""

    def __init__(self, dim: int = 1 << 16, max_n: int = 2) -> None:
        self.dim = dim
        self.max_n = max_n

    def _ngrams(self, namespace: str, toks: list[str], counts: dict[int, int]) -> None:
        for n in range(1, self.max_n + 1):
            for i in range(len(toks) - n + 1):
                b = _bucket(namespace + "|" + " ".join(toks[i : i + n]), self.dim)
                counts[b] = counts.get(b, 0) + 1

    def __call__(self, observation: Any) -> HashedFeatures:
        goal, transcript, turn, interventions = split_observation(observation)
        counts: dict[int, int] = {}
        self._ngrams("g", words(goal), counts)
        self._ngrams("l", words(last_turn(transcript)), counts)
        self._ngrams("t", [w for w in words(transcript) if w not in _STOP], counts)
        # structural markers as tokens, so "two searches, no answer" is a feature of its own
        counts[_bucket(f"turn={min(turn, 12)}", self.dim)] = 1
        if not counts:
            counts[_bucket("<empty>", self.dim)] = 1
        ids = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        weights = np.log1p(np.fromiter(counts.values(), dtype=np.float32, count=len(counts)))
        return HashedFeatures(ids, weights, transcript_stats(goal, transcript, turn, interventions))
