"""Observation features for the encoder steerer: behavioural statistics plus hashed n-grams of the agent's own text.

What "should I intervene now" depends on is *behaviour*: how many searches were made, whether the last turn was
a search whose results do not yet cover the question, whether the agent's query follows an entity from its
results (a bridge) or wanders away from the question, whether it repeats itself or produces invalid turns, how
the question is shaped (one entity or a comparison of two, a bridge clause). These are read from the observation
text only, never from simulator ground truth, and exist for any executor: no feature keys on one simulator's
phrasing (the simulator's words come from real agents and are chosen by the observable situation alone). The
retrieved passages' own words are task-specific; they enter only through overlap statistics with the goal (hashing
them as n-grams lets a small model memorise training tasks instead of learning behaviour, and a steerer that
memorises them does not rank held-out states).

Hashing keeps the featuriser vocabulary-free (nothing to fit, nothing to download) and stable across processes
(CRC32, not Python's salted ``hash``). N-grams live in separate *namespaces*: the goal (question shape), the
executor's own text in the latest turn (its think and query, outside the retrieved documents), the executor's
earlier text, and structural tokens (``turn=2``, ``searches=1``, ``last=search``).
"""

from __future__ import annotations

import re
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from steer_envs.executors.protocol import INVALID_ACTION_REPLY, searched_queries
from steer_envs.text import GOAL_ENTITY_RULES, entities
from steer_envs.text import OBSERVER_STOP_WORDS as _STOP
from steer_envs.text import WH_WORDS as _QUESTION_WORDS
from steer_envs.text import words as _text_words

_INFO = re.compile(r"<information>(.*?)</information>", re.S)
_TITLE = re.compile(r"\(Title: (.*?)\)")
_GUIDANCE = re.compile(r"<guidance>(.*?)</guidance>", re.S)
_COMPARISON = frozenset(
    "or both same either neither older younger first earlier later more less longer shorter larger smaller bigger "
    "higher lower".split()
)
_INVALID_MARK = "My previous action is invalid"
TURN_BUCKETS = 10

#: names of the dense statistics, in order (documented so a reader can inspect learned weights)
STAT_NAMES: tuple[str, ...] = (
    "turn",
    "searches",
    "distinct_query_ratio",
    "repeated_queries",
    "last_query_repeated",
    "last_query_goal_overlap",
    "evidence_goal_overlap",
    "last_evidence_goal_overlap",
    "interventions",
    "has_guidance",
    "invalid_turns",
    "transcript_len",
    "turns_since_new_title",
    # -- behaviour of the latest turn and progress so far -------------------------------------------------
    "no_search_yet",
    "one_search",
    "two_searches",
    "three_plus_searches",
    "last_turn_search",
    "last_turn_invalid",
    "last_query_follows_title",
    "last_query_off_goal",
    "queries_following_titles",
    "goal_entities_in_titles",
    "goal_entities_in_last_titles",
    "last_titles_goal_overlap",
    "last_guidance_turns_ago",
    # -- question shape -----------------------------------------------------------------------------------
    "goal_len",
    "goal_entities",
    "goal_comparison",
    "goal_clauses",
)


#: statistics only the statistics fast path (``fast_input="stats"``) reads, after :data:`STAT_NAMES`: where in the
#: turn budget the state is (one-hot: an intervention's value is not monotone in the turn; near the end of the
#: budget nothing it sets in motion can finish) and how long the agent has gone without a valid action
FAST_EXTRA_NAMES: tuple[str, ...] = (
    *(f"turn_is_{k}" for k in range(TURN_BUCKETS - 1)),
    f"turn_ge_{TURN_BUCKETS - 1}",
    "invalid_streak",
)


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` (:func:`steer_envs.text.words`)."""
    return _text_words(text)


def content_words(text: str) -> set[str]:
    """The words outside :data:`steer_envs.text.OBSERVER_STOP_WORDS`."""
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
    return transcript[max(start, len(transcript) - 1500) :]


def own_text(transcript: str) -> str:
    """The executor's own words: the transcript without retrieved documents and without the invalid-action reply."""
    return _INFO.sub(" ", transcript.replace(INVALID_ACTION_REPLY, " "))


def _segments(transcript: str) -> list[str]:
    """The transcript cut after each ``</information>`` block or invalid-action reply: one piece per executor turn."""
    cut = re.split(r"(?<=</information>)|(?<=Let me try again\.\n)", transcript)
    return [c for c in cut if c.strip()]


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a) if a else 0.0


#: capitalised phrases of the goal (beyond its first word), lowercased: the entities a question is about
#: (:func:`steer_envs.text.entities` with :data:`steer_envs.text.GOAL_ENTITY_RULES`, every phrase kept)
goal_entities = partial(entities, rules=GOAL_ENTITY_RULES)


def _entity_coverage(names: list[str], titles: list[str]) -> float:
    """The share of the goal's entity names found in the titles."""
    if not names:
        return 0.0
    joined = " || ".join(t.lower() for t in titles)
    return sum(1 for e in names if e in joined) / len(names)


def _invalid_streak(segments: list[str]) -> int:
    """How many of the latest turns in a row were invalid (no search, no answer): the agent is rambling."""
    streak = 0
    for segment in reversed(segments):
        if _INVALID_MARK in segment:
            streak += 1
        elif segment.rstrip().endswith("</information>"):
            break
        # else: a trailing note with no executor turn after it yet
    return streak


def _follows_titles(queries: list[str], blocks: list[str], goal_words: set[str]) -> list[bool]:
    """For each query after the first: does it use a word of an earlier result's title that the goal does not
    have (the agent follows an entity it found)?"""
    out = []
    seen: set[str] = set()
    for i, query in enumerate(queries):
        if i > 0:
            out.append(bool((content_words(query) - goal_words) & seen))
        if i < len(blocks):
            seen |= content_words(" ".join(_TITLE.findall(blocks[i])))
    return out


def fast_extra_stats(transcript: str, turn: int, segments: list[str] | None = None) -> np.ndarray:
    """The :data:`FAST_EXTRA_NAMES` statistics (``segments``: the transcript's :func:`_segments`, if already cut)."""
    one_hot = [float(min(turn, TURN_BUCKETS - 1) == k) for k in range(TURN_BUCKETS)]
    segments = _segments(transcript) if segments is None else segments
    return np.asarray(one_hot + [min(_invalid_streak(segments), 5) / 5.0], dtype=np.float32)


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
    all_titles: list[str] = []
    since_new = 0
    for block in blocks:
        titles = set(_TITLE.findall(block))
        if titles - titles_seen:
            since_new = 0
        else:
            since_new += 1
        titles_seen |= titles
        all_titles.extend(titles)
    last_titles = _TITLE.findall(blocks[-1]) if blocks else []
    tail = transcript.rstrip()
    last_is_search = tail.endswith("</information>")
    last_is_invalid = tail.endswith("Let me try again.")
    follows = _follows_titles(queries, blocks, goal_words)
    segments = _segments(transcript)
    guidance_at = [i for i, seg in enumerate(segments) if "<guidance>" in seg]
    guidance_ago = (len(segments) - 1 - guidance_at[-1]) if guidance_at else 6
    entities = goal_entities(goal)
    goal_toks = words(goal)
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
        transcript.count(_INVALID_MARK) / 5.0,
        min(len(transcript), 8000) / 8000.0,
        since_new / 5.0,
        float(n == 0),
        float(n == 1),
        float(n == 2),
        float(n >= 3),
        float(last_is_search),
        float(last_is_invalid),
        float(bool(follows) and follows[-1]),
        1.0 - _overlap(content_words(queries[-1]), goal_words) if n else 0.0,
        min(sum(follows), 3) / 3.0,
        _entity_coverage(entities, all_titles),
        _entity_coverage(entities, last_titles),
        _overlap(goal_words, content_words(" ".join(last_titles))),
        min(guidance_ago, 6) / 6.0,
        min(len(goal_toks), 40) / 40.0,
        min(len(entities), 4) / 4.0,
        float(any(w in _COMPARISON for w in goal_toks)),
        min(sum(w in _QUESTION_WORDS | {"that", "whose", "where", "which"} for w in goal_toks[1:]), 3) / 3.0,
    ]
    return np.asarray(stats, dtype=np.float32)


@dataclass(frozen=True)
class HashedFeatures:
    """Sparse bucket ids (with counts) plus dense statistics for one observation."""

    ids: np.ndarray  # int64 bucket ids
    weights: np.ndarray  # float32, log(1 + count)
    stats: np.ndarray  # float32, len(STAT_NAMES)
    fast_extra: np.ndarray  # float32, len(FAST_EXTRA_NAMES)


class HashedNgramFeaturizer:
    """Word 1-2-grams of the goal and of the executor's own text (latest turn, earlier turns), plus structural
    tokens, hashed into ``dim`` buckets; with the :func:`transcript_stats` statistics.

    Features of an observation never change, and the trainer scores the same state-bank observations every
    round, so results are memoised (``cache_size`` most recent observations).
    """

    def __init__(self, dim: int = 1 << 16, max_n: int = 2, cache_size: int = 50_000) -> None:
        self.dim = dim
        self.max_n = max_n
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple, HashedFeatures] = OrderedDict()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cache"] = OrderedDict()
        return state

    def _ngrams(self, namespace: str, toks: list[str], counts: dict[int, int]) -> None:
        for n in range(1, self.max_n + 1):
            for i in range(len(toks) - n + 1):
                b = _bucket(namespace + "|" + " ".join(toks[i : i + n]), self.dim)
                counts[b] = counts.get(b, 0) + 1

    def _token(self, token: str, counts: dict[int, int]) -> None:
        b = _bucket("#" + token, self.dim)
        counts[b] = counts.get(b, 0) + 1

    def _compute(self, goal: str, transcript: str, turn: int, interventions: int) -> HashedFeatures:
        counts: dict[int, int] = {}
        self._ngrams("g", words(goal), counts)
        segments = _segments(transcript)
        latest = segments[-1] if segments else ""
        earlier = "".join(segments[:-1])
        self._ngrams("l", words(own_text(latest)), counts)
        self._ngrams("e", [w for w in words(own_text(earlier)) if w not in _STOP], counts)
        stats = transcript_stats(goal, transcript, turn, interventions)
        named = dict(zip(STAT_NAMES, stats.tolist()))
        n = round(named["searches"] * 10)
        last = "search" if named["last_turn_search"] else "invalid" if named["last_turn_invalid"] else "none"
        # structural markers as tokens (and their conjunctions), so "one search, nothing found yet" is a feature
        for token in (
            f"turn={min(turn, 12)}",
            f"searches={min(n, 5)}",
            f"last={last}",
            f"iv={min(interventions, 3)}",
            f"searches={min(n, 5)}&last={last}",
            f"searches={min(n, 5)}&follows={named['queries_following_titles'] > 0}",
        ):
            self._token(token, counts)
        ids = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        weights = np.log1p(np.fromiter(counts.values(), dtype=np.float32, count=len(counts)))
        return HashedFeatures(ids, weights, stats, fast_extra_stats(transcript, turn, segments))

    def __call__(self, observation: Any) -> HashedFeatures:
        key = split_observation(observation)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        feats = self._compute(*key)
        if self.cache_size:
            self._cache[key] = feats
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return feats
