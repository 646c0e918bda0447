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

Entities work the same way: one extractor, :func:`entities`, and one :class:`EntityRules` per reader whose reading
differs (``ENTITY_RULES``, ``GOAL_ENTITY_RULES``, ``READER_ENTITY_RULES``, ``PIPELINE_ENTITY_RULES``,
``CANDIDATE_ENTITY_RULES``, ``CANDIDATE_SPAN_RULES``, ``ARGUMENT_ENTITY_RULES``), each exactly what that reader's
own copy did before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, ClassVar

__all__ = [
    "WORD",
    "TOKEN",
    "SENTENCE",
    "CAPITALISED",
    "CANDIDATE_SPAN",
    "ARGUMENT_PHRASE",
    "QUOTED_TITLE",
    "STOP_WORDS",
    "FEATURE_STOP_WORDS",
    "OBSERVER_STOP_WORDS",
    "SITUATION_STOP_WORDS",
    "CANDIDATE_STOP_WORDS",
    "READER_STOP_WORDS",
    "RELATION_STOP_WORDS",
    "WH_WORDS",
    "QUESTION_OPENERS",
    "PIPELINE_OPENERS",
    "READER_OPENERS",
    "NO_WORDS",
    "LEADING_FUNCTION_WORDS",
    "ARGUMENT_SKIP_WORDS",
    "EntityRules",
    "ENTITY_RULES",
    "GOAL_ENTITY_RULES",
    "READER_ENTITY_RULES",
    "PIPELINE_ENTITY_RULES",
    "CANDIDATE_ENTITY_RULES",
    "CANDIDATE_SPAN_RULES",
    "ARGUMENT_ENTITY_RULES",
    "entity_spans",
    "words",
    "tokens",
    "content_words",
    "similarity",
    "entities",
    "sentences",
    "split_sentences",
    "normalize_query",
    "strip_tags",
    "query_key",
]

#: a word: a run of lowercase ASCII letters and digits (apply to lowercased text; "Röntgen's" -> "r", "ntgen", "s")
WORD = re.compile(r"[a-z0-9]+")
#: a name token: letters of any script, digits and apostrophes kept inside ("People's", "Röntgen")
TOKEN = re.compile(r"[\w'’]+")
#: a sentence boundary: end punctuation, whitespace, then what can start a sentence
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
#: a capitalised phrase: capitalised words joined by spaces and the lowercase particles of names ("Republic of China")
CAPITALISED = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|von|and|[A-Z][\w'’.-]*))*")
#: the admissible action set's name span: capitalised words joined by whitespace and a wider list of name particles
#: ("Ludwig van Beethoven", "Procter & Gamble", "Juan Carlos y Borbón"); a span always ends on a capitalised word
_CAP_WORD = r"(?:[A-Z][\w'’\-\.]*)"
CANDIDATE_SPAN = re.compile(
    rf"{_CAP_WORD}(?:(?:\s+(?:of|the|de|del|da|di|von|van|der|du|le|la|and|for|in|on|&|y))*\s+{_CAP_WORD})*"
)
#: the steerer's argument phrase: like ``CAPITALISED``, but a particle may also *start* a phrase, so "the Beatles"
#: or "of France" in the middle of a goal is one phrase (which ``ARGUMENT_ENTITY_RULES`` then drops whole)
ARGUMENT_PHRASE = re.compile(r"\b(?:[A-Z][\w'’.-]*|of|the|de|von|and)(?:\s+(?:[A-Z][\w'’.-]*|of|the|de|von|and))*")
#: a quoted title ("Who wrote \"The Hobbit\"?"): 2 to 80 characters between double quotes
QUOTED_TITLE = re.compile(r"\"([^\"]{2,80})\"")
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
#: the function words that start a sentence rather than a name ("The Beatles were" -> "Beatles", "After the war
#: ..."): the admissible action set trims them, repeatedly, from the front of its spans (capitalised, as written
#: at a sentence start; a lowercase "the" inside a span is a particle and stays)
LEADING_FUNCTION_WORDS: frozenset[str] = frozenset(
    "the a an in on at by for from his her its their he she it they this that after before during when while as "
    "with of and but however although since there".split()
)
#: the single words that are no argument of the steerer's interventions (question words and "the")
ARGUMENT_SKIP_WORDS: frozenset[str] = frozenset("who what which when where the".split())


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


@dataclass(frozen=True)
class EntityRules:
    """How :func:`entities` reads the names out of a text: the one extractor's differences between readers, named.

    Why a rule set and not a copy per reader: the readers genuinely differ (the admissible action set wants clean
    spans it can score and search, the steering features every phrase as written), and those differences must stay
    exactly as they were (simulated episodes, feature vectors and candidate sets depend on them); as fields of one
    rule set they sit side by side in this module, each instance below saying which reader it is and why.

    A phrase is read in this order: a ``pattern`` match, stripped of ``strip`` characters at both ends; then, when
    ``trim_leading`` is set, its first word removed while it is one of ``trim_leading`` (as written) and more words
    follow, and stripped again; then, for a match at the very start of the text, its first word removed when that
    word (lowercased) is an opener. It is kept when it has at least ``min_length`` characters, is not skipped (a
    phrase that, lowercased, is one word of ``skip``; with ``skip_all_words``, one whose words all are), and, with
    ``capital_start``, when it starts with a capital. :func:`entities` then puts the quoted titles first (with
    ``quoted_titles``; they obey ``min_length`` only), lowercases (``lowercase``) and drops repeats (``dedupe``).
    """

    pattern: re.Pattern[str] = CAPITALISED  # what counts as one phrase
    strip: str = " .,'’?"  # characters stripped from both ends of a phrase
    openers: frozenset[str] = QUESTION_OPENERS  # first words dropped from a phrase that starts the text
    trim_leading: frozenset[str] = NO_WORDS  # words (case as written) trimmed, repeatedly, from a phrase's front
    skip: frozenset[str] = STOP_WORDS  # single words that are no name
    skip_all_words: bool = False  # skip a phrase whose words (``words``) are all in ``skip``, not only a single one
    capital_start: bool = False  # drop a phrase the pattern starts with a lowercase particle ("the Beatles")
    quoted_titles: bool = False  # the titles between double quotes come first ('Who wrote "The Hobbit"?')
    dedupe: bool = False  # each phrase once, at its first place
    min_length: int = 1  # fewer characters than this: no name
    lowercase: bool = False  # phrases lowercased (readers that compare them with lowercased text)
    #: the fields as one tuple, set on each instance by ``__post_init__``; declared ClassVar so that it is no field
    _plan: ClassVar[tuple[Any, ...]]

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, re.Pattern):
            raise TypeError(
                f"EntityRules.pattern must be a compiled pattern, got {self.pattern!r}: pass "
                f"re.compile({self.pattern!r})"
            )
        for name in ("openers", "trim_leading", "skip"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError(
                    f"EntityRules.{name} must be a set of words, got the string {value!r} (it would "
                    f"match its substrings): pass frozenset({value.split()!r})"
                )
            if not isinstance(value, frozenset):  # a set or list of words: hashable, like the named word sets
                object.__setattr__(self, name, frozenset(value))
        if self.min_length < 1:
            raise ValueError(
                f"EntityRules.min_length must be at least 1, got {self.min_length}: an empty phrase is "
                "no name; min_length=1 keeps every non-empty phrase"
            )
        # the fields as one tuple (not a field: outside ==, hash and repr): the extractor reads them in one step
        object.__setattr__(
            self,
            "_plan",
            (
                self.pattern,
                self.strip,
                self.openers,
                self.trim_leading,
                self.skip,
                self.min_length,
                self.skip_all_words,
                self.capital_start,
                self.quoted_titles,
                self.lowercase,
                self.dedupe,
            ),
        )


#: the default: the simulator's searcher and every ``entities(text)`` caller (openers and single stop words out)
ENTITY_RULES = EntityRules()
#: the steering features (``agents.steering.features.goal_entities``): every phrase kept, lowercased, because the
#: features look phrases up in lowercased titles
GOAL_ENTITY_RULES = EntityRules(skip=NO_WORDS, lowercase=True)
#: the answerability reader (``steer_envs.reader.features``): as the steering features, with the reader's openers
#: ("Name the ..." does not name "Name")
READER_ENTITY_RULES = EntityRules(openers=READER_OPENERS, skip=NO_WORDS, lowercase=True)
#: the pipeline roles (``executors.pipeline.roles``): every phrase kept as written, the pipeline's narrower openers
PIPELINE_ENTITY_RULES = EntityRules(openers=PIPELINE_OPENERS, skip=NO_WORDS)
#: the admissible action set's question entities (``envs.admissible``): its candidates are searched and answered
#: as they are, so they are clean names: quoted titles, the wider name span, leading function words trimmed,
#: single function words out, each once, one-letter spans out. (The question words and auxiliaries are all in
#: ``CANDIDATE_STOP_WORDS``, so ``skip`` alone drops them.)
CANDIDATE_ENTITY_RULES = EntityRules(
    pattern=CANDIDATE_SPAN,
    strip=" ,;:.'\"()[]",
    openers=NO_WORDS,
    trim_leading=frozenset(w.capitalize() for w in LEADING_FUNCTION_WORDS),
    skip=CANDIDATE_STOP_WORDS,
    quoted_titles=True,
    dedupe=True,
    min_length=2,
)
#: the admissible action set's document spans (``envs.admissible``, one sentence of a retrieved document at a
#: time, with positions: :func:`entity_spans`): the question entities' spans, but a span is dropped only when
#: all its words are function words ("In The", "Who Was")
CANDIDATE_SPAN_RULES = replace(CANDIDATE_ENTITY_RULES, skip_all_words=True, quoted_titles=False, dedupe=False)
#: the steerer's intervention arguments (``agents.steering.interventions``): the goal's phrases as written, a
#: phrase opening with a particle dropped whole, question words and "the" out
ARGUMENT_ENTITY_RULES = EntityRules(
    pattern=ARGUMENT_PHRASE, strip=" .,'’", openers=NO_WORDS, skip=ARGUMENT_SKIP_WORDS, capital_start=True
)


def _phrases(text: str, rules: EntityRules, positions: bool) -> list:
    """The one extractor (see :class:`EntityRules` for the order): with ``positions`` the phrase stage with where
    each match sits, else the finished list of :func:`entities`. Rule fields are read once per text (hot path)."""
    pattern, strip, openers, trim, skip, min_length, all_words, capital_start, quoted, lowercase, dedupe = rules._plan
    out: list = []
    for m in pattern.finditer(text):
        phrase = m.group(0).strip(strip)
        if trim:
            # drop the first word while it is in ``trim`` and whitespace follows it (``str.split`` and the pattern
            # agree on what whitespace is); a phrase starting with whitespace has no first word to drop
            while phrase[:1] and not phrase[:1].isspace():
                head = phrase.split(None, 1)
                if head[0] not in trim or len(head[0]) == len(phrase):
                    break
                phrase = head[1] if len(head) == 2 else ""
            phrase = phrase.strip(strip)
        if openers and m.start() == 0:
            first, _, rest = phrase.partition(" ")
            if first.lower() in openers:
                phrase = rest
        if len(phrase) < min_length:
            continue
        if all(w in skip for w in words(phrase)) if all_words else phrase.lower() in skip:
            continue
        if capital_start and not phrase.split()[0][:1].isupper():
            continue
        out.append((phrase, m.start(), m.end()) if positions else phrase)
    if positions:
        return out
    if quoted:
        titles = (m.group(1).strip() for m in QUOTED_TITLE.finditer(text))
        out = [title for title in titles if len(title) >= min_length] + out
    if lowercase:
        out = [phrase.lower() for phrase in out]
    if dedupe:
        out = list(dict.fromkeys(out))
    return out


def entity_spans(text: str, rules: EntityRules = ENTITY_RULES) -> list[tuple[str, int, int]]:
    """The phrases of ``text`` under ``rules`` with where their pattern match starts and ends, in order (no quoted
    titles, no lowercasing, repeats kept): the stage of :func:`entities` for a reader that needs positions."""
    return _phrases(text, rules, True)


def entities(
    text: str,
    rules: EntityRules = ENTITY_RULES,
    *,
    openers: frozenset[str] | None = None,
    skip: frozenset[str] | None = None,
) -> list[str]:
    """The names a question or query is about: the phrases of ``text`` under ``rules`` (:class:`EntityRules`; the
    named instances above are the readers' sets), in order. The one entity extractor of the project.

    With the default rules a phrase is a ``CAPITALISED`` run; at the very start it loses its first word when that
    word is an opener ("Who", "In", "The"), and a phrase that is a single stop word is dropped ("What" in the middle
    of a question). ``openers=`` / ``skip=`` override those two fields of ``rules`` (``skip=NO_WORDS`` keeps every
    phrase)."""
    if openers is not None or skip is not None:
        rules = replace(
            rules, openers=rules.openers if openers is None else openers, skip=rules.skip if skip is None else skip
        )
    return _phrases(text, rules, False)


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
