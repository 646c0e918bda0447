"""The one home of the text helpers every reader of questions and transcripts uses: words, stop words, entities,
sentences and query normalisation.

Why one module: the simulator, the pipeline roles, the admissible action set, the feature wrappers and the
steering features all read the same kinds of text (questions, queries, retrieved passages), and copies of these
helpers drifted apart (a stop word one reader skips, a question word another one keeps). Here each job has one
definition; a reader that genuinely needs a different word set uses a *named extension* of the one stop list
below, documented with the reason, so the differences are visible side by side instead of hidden in copies.

The extensions exist because simulated episodes, steering feature vectors and ACTGUIDE candidate features must
stay identical for the same seeds (trained steerers and recorded results depend on them): each extension is
exactly the word set its reader used before this module existed.
"""
from __future__ import annotations

import re

__all__ = [
    "WORD", "TOKEN", "SENTENCE", "CAPITALISED",
    "STOP_WORDS", "FEATURE_STOP_WORDS", "OBSERVER_STOP_WORDS", "SITUATION_STOP_WORDS", "CANDIDATE_STOP_WORDS",
    "READER_STOP_WORDS", "RELATION_STOP_WORDS", "WH_WORDS", "QUESTION_OPENERS", "PIPELINE_OPENERS", "READER_OPENERS",
    "NO_WORDS",
    "words", "tokens", "content_words", "similarity", "entities", "sentences", "split_sentences", "normalize_query",
    "strip_tags", "query_key",
]

#: a word: a run of lowercase ASCII letters and digits (apply to lowercased text; "Röntgen's" -> "r", "ntgen", "s")
WORD = re.compile(r"[a-z0-9]+")
#: a name token: letters of any script, digits and apostrophes kept inside ("People's", "Röntgen")
TOKEN = re.compile(r"[\w'’]+")
#: a sentence boundary: end punctuation, whitespace, then what can start a sentence
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
#: a capitalised phrase: capitalised words joined by spaces and the lowercase particles of names ("Republic of China")
CAPITALISED = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|von|and|[A-Z][\w'’.-]*))*")
_TAG = re.compile(r"<[^>]{1,40}>")

#: the stop list: articles, prepositions, conjunctions, question words and auxiliaries that every reader skips
STOP_WORDS: frozenset[str] = frozenset(
    "the a an of in on at to for and or is was were who what which when where how did does do by with from".split()
)
#: the feature wrappers' words (``steer_envs.wrappers.features``): also the copula and the demonstratives
FEATURE_STOP_WORDS: frozenset[str] = STOP_WORDS | frozenset("are as be that this".split())
#: the steering features' words (``agents.steering.features``): also pronouns, "been", "whom", "why" and the "s" of
#: a possessive (``WORD`` splits "Tolkien's" into "tolkien", "s")
OBSERVER_STOP_WORDS: frozenset[str] = FEATURE_STOP_WORDS | frozenset("been her his it its s their whom why".split())
#: the simulator's observable situation (``executors.sim.situation``): also "whose" and the "name(d)" of questions
#: like "what is the name of ..."
SITUATION_STOP_WORDS: frozenset[str] = OBSERVER_STOP_WORDS | frozenset("name named whose".split())
#: the admissible action set (``envs.admissible``): a longer list of function words, because its spans are scored by
#: how many *content* words they share with the question, and "yes" / "no" / "same" / "both" are its polar answers
#: and comparison cues rather than content; the possessive "s" counts as a word there
CANDIDATE_STOP_WORDS: frozenset[str] = (SITUATION_STOP_WORDS - {"s"}) | frozenset(
    "about after also before between both during had has have he into no not over same she than then there these "
    "they those under yes".split()
)
#: the answerability reader's words (``steer_envs.reader.features``): also "first", a comparison cue ("which came
#: first") that its question-type regex reads, not content; as content it would match every "the first album"
READER_STOP_WORDS: frozenset[str] = OBSERVER_STOP_WORDS | frozenset({"first"})
#: the words a comparison hop drops from the question to keep its relation (``executors.sim.hops``): also the
#: comparison words and "film(s)", the subject type most comparison questions name
RELATION_STOP_WORDS: frozenset[str] = STOP_WORDS | frozenset("are both film films same than that".split())
#: the question words
WH_WORDS: frozenset[str] = frozenset("who whom whose what which when where why how".split())
#: the first words of a question that are not part of a name ("Who", "In", "The" at the start of a question)
QUESTION_OPENERS: frozenset[str] = WH_WORDS | frozenset("is was are were did does do in the".split())
#: the answerability reader's openers: also "name", so "Name the ..." does not count "Name" as an entity
READER_OPENERS: frozenset[str] = QUESTION_OPENERS | frozenset({"name"})
#: the pipeline roles' openers: a narrower set, kept so recorded pipeline episodes replay identically (a question
#: opening with "Whose" / "Why" / "Are" / "Were" / "Do" keeps that word in its first phrase there)
PIPELINE_OPENERS: frozenset[str] = QUESTION_OPENERS - frozenset("whom whose why are were do".split())
#: an empty word set (``entities(..., skip=NO_WORDS)`` keeps every phrase)
NO_WORDS: frozenset[str] = frozenset()


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` (``WORD`` on the lowercased text), in order."""
    return WORD.findall(text.lower())


def tokens(text: str) -> list[str]:
    """The name tokens of ``text`` as written (case and apostrophes kept): what "does the question name X" compares."""
    return TOKEN.findall(text)


def content_words(text: str, stop: frozenset[str] = STOP_WORDS) -> frozenset[str]:
    """The words of ``text`` outside ``stop`` (the stop list or one of its named extensions)."""
    return frozenset(w for w in words(text) if w not in stop)


def similarity(a: str, b: str, stop: frozenset[str] = CANDIDATE_STOP_WORDS) -> float:
    """Token-set F1 of two strings (content words; all words when either has no content word). The default word
    set is the admissible action set's: ACTGUIDE matches taken, hinted and reference actions with it."""
    wa, wb = content_words(a, stop), content_words(b, stop)
    if not wa or not wb:
        wa, wb = frozenset(words(a)), frozenset(words(b))
    common = len(wa & wb)
    if not common:
        return 0.0
    p, r = common / len(wa), common / len(wb)
    return 2 * p * r / (p + r)


def entities(text: str, *, openers: frozenset[str] = QUESTION_OPENERS, skip: frozenset[str] = STOP_WORDS) -> list[str]:
    """The capitalised phrases of ``text`` (``CAPITALISED``), in order: the names a question or query is about.

    A phrase at the very start loses its first word when that word is an opener ("Who", "In", "The"); a phrase that
    is a single word of ``skip`` is dropped ("What" in the middle of a question). Pass ``skip=NO_WORDS`` to keep
    every phrase (the steering features and pipeline roles read them that way)."""
    out = []
    for m in CAPITALISED.finditer(text):
        phrase = m.group(0).strip(" .,'’?")
        first, _, rest = phrase.partition(" ")
        if m.start() == 0 and first.lower() in openers:
            phrase = rest
        if phrase and phrase.lower() not in skip:
            out.append(phrase)
    return out


def split_sentences(text: str) -> list[str]:
    """The pieces of ``text`` between sentence boundaries, as they are (whitespace around them kept)."""
    return SENTENCE.split(text)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, empty ones dropped."""
    return [s.strip() for s in split_sentences(text) if s.strip()]


def normalize_query(query: str) -> str:
    """A query as its words joined by single spaces: "Who is  X?" and "who is x" are the same search."""
    return " ".join(WORD.findall(query.lower()))


def strip_tags(text: str) -> str:
    """``text`` with protocol tags (``<search>``, ``<information>``) replaced by spaces."""
    return _TAG.sub(" ", text)


def query_key(query: str) -> str:
    """An order-free key of a query (its distinct words, sorted): a reordered query counts as a repeat."""
    return " ".join(sorted(set(WORD.findall(strip_tags(query.lower())))))
