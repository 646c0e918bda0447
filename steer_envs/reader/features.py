"""Pair features of (question, retrieved passage) that a steerer can compute at decision time.

Three kinds, all from the observation (the goal and the latest retrieved documents), never from ground truth:

* **coverage**: how much of the question the passage, its title and its best sentence cover (content words and
  the question's capitalised entities); a passage *about* the question's subject is where a one-hop answer is;
* **answer-type cues**: the question's type (when / how many / who / where / yes-no / comparison) crossed with
  what the passage offers of that type (a year, a number, a capitalised name the question does not have), in the
  passage and in its best sentence (an answer sits next to the question's words);
* **meaning** (optional, from the encoder): the question-passage cosine and, when ``interactions`` is on, the
  elementwise product of the two vectors (a linear model on it is a learned bilinear match).

The names are listed in :data:`LEXICAL_NAMES` so learned weights can be read. Words, the stop list, entities
and sentences come from :mod:`steer_envs.text` (the reader's word set is its named extension
``READER_STOP_WORDS``, its question openers ``READER_OPENERS``); the year, number and question-type patterns here
are answer-type cues, which no other reader has.
"""

from __future__ import annotations

import re
from functools import partial

import numpy as np

from .. import text as _text
from .states import Document

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(
    r"\b\d+(?:[.,]\d+)*\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"hundred|thousand|million|billion)\b",
    re.I,
)
QUESTION_TYPES = ("when", "how_many", "who", "where", "yes_no", "comparison", "what")
_HOW_MANY = re.compile(r"\bhow (many|much|long|old|far|big|tall|high)\b|\bwhat (year|age|number)\b|\bwhich year\b")
_YES_NO = re.compile(r"^(is|was|are|were|did|does|do|can|could|has|have|had)\b")
_COMPARISON = re.compile(
    r"\b(or|both|same|older|younger|earlier|later|first|longer|shorter|larger|smaller|more|"
    r"less)\b"
)

LEXICAL_NAMES: tuple[str, ...] = (
    "goal_overlap",
    "goal_overlap_title",
    "title_in_goal",
    "entity_cover",
    "entity_in_title",
    "best_sentence_overlap",
    "rank_1",
    "rank_2",
    "rank_3_plus",
    "log_length",
    "novel_caps",
    "years",
    "numbers",
    "best_novel_caps",
    "best_year",
    "best_number",
    *(f"q_{t}" for t in QUESTION_TYPES),
    "when_x_year",
    "when_x_best_year",
    "howmany_x_number",
    "howmany_x_best_number",
    "who_x_novel_caps",
    "who_x_best_novel_caps",
    "where_x_novel_caps",
    "what_x_best_novel_caps",
    "comparison_x_entity_cover",
    "yesno_x_entity_cover",
)


def content_words(text: str) -> set[str]:
    """The reader's content words of ``text`` (:func:`steer_envs.text.content_words` with ``READER_STOP_WORDS``)."""
    return set(_text.content_words(text, _text.READER_STOP_WORDS))


def question_type(question: str) -> str:
    low = question.strip().lower()
    if _HOW_MANY.search(low):
        return "how_many"
    if low.startswith("when") or " when " in low[:40]:
        return "when"
    if _YES_NO.match(low):
        return "comparison" if _COMPARISON.search(low) else "yes_no"
    if _COMPARISON.search(low) and (" or " in low or "both" in low):
        return "comparison"
    if low.startswith(("who", "whom", "whose")) or " who " in low[:30]:
        return "who"
    if low.startswith("where") or " where " in low[:30]:
        return "where"
    return "what"


#: the capitalised phrases of ``text``, lowercased (:func:`steer_envs.text.entities` with
#: :data:`steer_envs.text.READER_ENTITY_RULES`: every phrase kept, a leading question word of ``READER_OPENERS``
#: dropped)
entities = partial(_text.entities, rules=_text.READER_ENTITY_RULES)


class QuestionView:
    """What the features need of the question, computed once per question."""

    def __init__(self, question: str) -> None:
        self.text = question
        self.words = content_words(question)
        self.entities = entities(question)
        self.low = question.lower()
        self.type = question_type(question)


def _novel_caps(text: str, q: QuestionView) -> int:
    return sum(1 for e in entities(text) if e not in q.low and not content_words(e) <= q.words)


def _cover(words: set[str], q: QuestionView) -> float:
    return len(q.words & words) / len(q.words) if q.words else 0.0


def lexical_features(q: QuestionView | str, doc: Document) -> np.ndarray:
    """The :data:`LEXICAL_NAMES` values (roughly in [0, 1]) of one question-passage pair."""
    q = q if isinstance(q, QuestionView) else QuestionView(q)
    text, title = doc.text, doc.title
    low = f"{title}\n{text}".lower()
    pwords = content_words(text) | content_words(title)
    twords = content_words(title)
    sentences = _text.sentences(text) or [text]
    best = max(sentences, key=lambda s: (len(q.words & content_words(s)), -sentences.index(s)))
    ent_cover = sum(1 for e in q.entities if e in low) / len(q.entities) if q.entities else 0.0
    ent_title = (
        sum(1 for e in q.entities if e in title.lower() or title.lower() in e) / len(q.entities)
        if q.entities and title
        else 0.0
    )
    novel, best_novel = _novel_caps(text, q), _novel_caps(best, q)
    years, best_year = len(_YEAR.findall(text)), float(bool(_YEAR.search(best)))
    numbers, best_number = len(_NUMBER.findall(text)), float(bool(_NUMBER.search(best)))
    qt = {t: float(q.type == t) for t in QUESTION_TYPES}
    has_year, has_number, has_novel = float(years > 0), float(numbers > 0), float(novel > 0)
    values = [
        _cover(pwords, q),
        _cover(twords, q),
        len(twords & q.words) / len(twords) if twords else 0.0,
        ent_cover,
        ent_title,
        _cover(content_words(best), q),
        float(doc.rank == 1),
        float(doc.rank == 2),
        float(doc.rank >= 3),
        np.log1p(len(text.split())) / 6.0,
        min(novel, 20) / 20.0,
        min(years, 10) / 10.0,
        min(numbers, 20) / 20.0,
        min(best_novel, 5) / 5.0,
        best_year,
        best_number,
        *(qt[t] for t in QUESTION_TYPES),
        qt["when"] * has_year,
        qt["when"] * best_year,
        qt["how_many"] * has_number,
        qt["how_many"] * best_number,
        qt["who"] * has_novel,
        qt["who"] * float(best_novel > 0),
        qt["where"] * has_novel,
        qt["what"] * float(best_novel > 0),
        qt["comparison"] * ent_cover,
        qt["yes_no"] * ent_cover,
    ]
    return np.asarray(values, dtype=np.float32)


def pair_features(lexical: np.ndarray, qvec: np.ndarray, pvec: np.ndarray, interactions: bool) -> np.ndarray:
    """Rows of [lexical ; cosine ; (q * p if interactions)] for aligned arrays of pairs."""
    parts = [lexical]
    if qvec.shape[1]:
        parts.append(np.sum(qvec * pvec, axis=1, keepdims=True))
        if interactions:
            parts.append(qvec * pvec)
    return np.concatenate(parts, axis=1).astype(np.float32)
