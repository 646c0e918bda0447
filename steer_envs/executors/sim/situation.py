"""The *observable* situation of a search agent's turn: what anyone reading its transcript can tell.

The testbed's first rule: the simulator's own words may depend on nothing an observer could not see. This module is
the one definition of "what an observer can see" that the simulator uses to choose its words (from :mod:`.thoughts`)
and that the leak test uses as its baseline: the kind of action the agent is about to take, the turn, whether its
query repeats an earlier one, whether the last results' titles overlap the question, and whether an answer was already
proposed (and rejected). Every field is computed from text that is in the transcript.

The key backs off from the full situation to coarser ones, so a situation never seen in the recordings still gets
words from the nearest one that was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...text import SITUATION_STOP_WORDS, normalize_query  # noqa: F401  (normalize_query: re-exported, its old home)
from ...text import content_words as _content_words

ACTS: tuple[str, ...] = ("search", "answer", "invalid")
TURN_BUCKETS = 3  # 0, 1, 2 and later


def content_words(text: str) -> set[str]:
    """The words an observer counts (:data:`steer_envs.text.SITUATION_STOP_WORDS` skipped)."""
    return set(_content_words(text, SITUATION_STOP_WORDS))


def titles_overlap_question(question: str, titles: Sequence[str]) -> bool:
    """Whether any retrieved title shares a content word with the question (a cue any reader sees)."""
    goal = content_words(question)
    return any(content_words(t) & goal for t in titles)


@dataclass(frozen=True)
class Situation:
    """One turn's observable situation. ``act`` is the action the turn ends in."""

    act: str
    turn: int
    repeat: bool = False
    overlap: bool = False
    proposed: bool = False

    @property
    def turn_bucket(self) -> int:
        return min(self.turn, TURN_BUCKETS - 1)

    def keys(self) -> tuple[str, ...]:
        """Lookup keys from the most specific to the coarsest (the back-off order)."""
        t = self.turn_bucket
        r, o, p = int(self.repeat), int(self.overlap), int(self.proposed)
        return (
            f"{self.act}|t{t}|r{r}|o{o}|p{p}",
            f"{self.act}|t{t}|r{r}|o{o}",
            f"{self.act}|t{t}|o{o}",
            f"{self.act}|t{t}",
            f"{self.act}",
        )


def situation_of(
    question: str,
    act: str,
    turn: int,
    query: str | None,
    earlier_queries: Sequence[str],
    last_titles: Sequence[str],
    proposed: bool,
) -> Situation:
    """The situation of a turn about to end in ``act`` (``query`` for a search), given what came before it."""
    if act not in ACTS:
        raise ValueError(f"act must be one of {ACTS}, got {act!r}")
    repeat = (
        act == "search"
        and query is not None
        and normalize_query(query) in {normalize_query(q) for q in earlier_queries}
    )
    overlap = bool(last_titles) and titles_overlap_question(question, last_titles)
    return Situation(act, int(turn), bool(repeat), overlap, bool(proposed))
