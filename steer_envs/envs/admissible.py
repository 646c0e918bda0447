"""The admissible action set of GuidedSearch-v0's discrete mode: candidate queries and answers a CPU policy picks from.

A real search agent writes any query or answer; a small CPU policy picks one from a list. The list is built only from
what the agent itself has seen: the question, and the titles and text spans of the documents its own searches
returned. Nothing in it depends on the golden answer or on the reference plan:

* **queries**: the question itself, the entity mentions of the question, then titles and entity spans of the
  retrieved documents (not searched yet);
* **answers**: ``yes`` / ``no`` and the question's entities (comparison questions), then titles, entity spans,
  dates, numbers and the nouns after "is a / was an" of the retrieved documents.

Document spans are ranked by observable cues only: spans of each search's top document first (latest search
first), then the second documents, and so on, in order of appearance.

Ranking decides only which spans make the cut; the slots are then shuffled by a seeded permutation, so an action
index says nothing about rank. Every candidate carries a numeric feature vector (:func:`candidate_features`) that a
policy network reads, including how well it matches the current step of a hint when one is shown.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

from ..data.scoring import asearcher_normalize
from ..reference_plans.records import ANSWER, SEARCH, PlanAction
from ..text import (  # noqa: F401  (similarity, words: re-exported, their old home)
    CANDIDATE_ENTITY_RULES,
    CANDIDATE_SPAN_RULES,
    entities,
    entity_spans,
    similarity,
    split_sentences,
    words,
)
from ..text import CANDIDATE_STOP_WORDS as _STOP
from ..text import content_words as _content_words

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+(?:{_MONTHS})\s+\d{{3,4}}|(?:{_MONTHS})\s+\d{{1,2}},?\s+\d{{3,4}}|(?:{_MONTHS})\s+\d{{3,4}})\b"
)
_NUMBER = re.compile(r"\b(?:\d{1,3}(?:,\d{3})+|\d{3,}(?:\.\d+)?)\b")
_IS_A = re.compile(r"\b(?:is|was|are|were|became|becomes)\s+(?:a|an|the)\s+((?:[A-Za-z\-]+\s+){0,2}[a-z\-]+)")


@dataclass(frozen=True)
class RetrievedDoc:
    """A document the agent saw: which search block it came in (0-based), its rank there (1-based), title, text."""

    block: int
    rank: int
    title: str
    text: str


@dataclass(frozen=True)
class Candidate:
    """One admissible action. ``origin``: question | question_entity | title | span | date | number | noun |
    polar (yes/no). The cue fields are observable statistics used for ranking and as features."""

    kind: str
    text: str
    origin: str
    latest: bool = False  # comes from the latest search's results
    best_rank: int = 0  # best rank among documents containing it (0: not from a document)
    frequency: int = 0  # occurrences across all retrieved documents
    context_overlap: float = 0.0  # best share of question words in a sentence containing it
    in_title: bool = False  # equals a retrieved title
    position: int = 0  # order of first appearance in its best document (0 = the title)
    local_overlap: float = 0.0  # best share of question words among the words right before / after it
    relation_overlap: float = 0.0  # best share of the question's relation words in a sentence containing it

    def action(self) -> PlanAction:
        return PlanAction.search(self.text) if self.kind == SEARCH else PlanAction.answer(self.text)

    def render(self) -> str:
        return f"{self.kind}: {self.text}"


@lru_cache(maxsize=200_000)
def _words(text: str) -> tuple[str, ...]:
    """:func:`steer_envs.text.words`, memoised (documents and their sentences recur across states)."""
    return tuple(words(text))


@lru_cache(maxsize=200_000)
def content_words(text: str) -> frozenset[str]:
    """The words outside :data:`steer_envs.text.CANDIDATE_STOP_WORDS` (memoised)."""
    return _content_words(text, _STOP)


#: quoted titles and capitalised spans of the question, each once (:func:`steer_envs.text.entities` with
#: :data:`steer_envs.text.CANDIDATE_ENTITY_RULES`; this name is kept for its callers)
question_entities = partial(entities, rules=CANDIDATE_ENTITY_RULES)


@lru_cache(maxsize=100_000)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(split_sentences(text))


#: words on each side of a span that count as its local context
WINDOW = 6


@lru_cache(maxsize=200_000)
def _spans(text: str) -> tuple[tuple[str, str, str, frozenset[str]], ...]:
    """(span, origin, normalised key, local context words) of one sentence (memoised: documents recur)."""
    out = []
    for span, origin, start, end in _raw_spans(text):
        local = frozenset(_words(text[:start])[-WINDOW:] + _words(text[end:])[:WINDOW])
        out.append((span, origin, asearcher_normalize(span), local))
    return tuple(out)


def _raw_spans(text: str) -> list[tuple[str, str, int, int]]:
    """(span, origin, start, end) of one text: dates, numbers, capitalised spans, nouns after 'is a'."""
    found: list[tuple[str, str, int, int]] = []
    for m in _DATE.finditer(text):
        found.append((m.group(0), "date", m.start(), m.end()))
    for m in _NUMBER.finditer(text):
        found.append((m.group(0), "number", m.start(), m.end()))
    found.extend((span, "span", start, end) for span, start, end in entity_spans(text, CANDIDATE_SPAN_RULES))
    for m in _IS_A.finditer(text):
        tokens = m.group(1).split()
        while tokens and tokens[-1].lower() in _STOP:
            tokens.pop()
        while tokens and tokens[0].lower() in _STOP:
            tokens.pop(0)
        if not tokens:
            continue
        found.append((" ".join(tokens), "noun", m.start(1), m.end(1)))
        if len(tokens) > 1:
            found.append((tokens[-1], "noun", m.start(1), m.end(1)))
    return found


def _shuffle_key(seed: int, text: str) -> int:
    return zlib.crc32(f"{seed}|{text}".encode())


def build_candidates(
    question: str,
    searched: Sequence[str],
    docs: Sequence[RetrievedDoc],
    max_queries: int,
    max_answers: int,
    shuffle_seed: int,
) -> list[Candidate]:
    """The admissible set of one state, in slot order (a seeded shuffle of the ranked lists)."""
    q_words = content_words(question)
    # the question's relation words: content words outside its entity mentions ("directed", "born", "capital")
    q_relation = q_words - frozenset(w for e in question_entities(question) for w in _words(e))
    q_lower = question.lower()
    latest_block = max((d.block for d in docs), default=-1)
    searched_keys = {asearcher_normalize(s) for s in searched}

    # -- statistics of every span of the retrieved documents (observable cues only) --------------------------
    stats: dict[str, dict] = {}
    titles = {asearcher_normalize(d.title) for d in docs}
    for doc in docs:
        doc_words = content_words(doc.text) | content_words(doc.title)
        entries = [
            (
                doc.title,
                "title",
                asearcher_normalize(doc.title),
                len(q_words & doc_words) / max(1, len(q_words)),
                0.0,
                len(q_relation & doc_words) / max(1, len(q_relation)),
            )
        ]
        for sentence in _sentences(doc.text):
            sentence_words = content_words(sentence)
            overlap = len(q_words & sentence_words) / max(1, len(q_words))
            relation = len(q_relation & sentence_words) / max(1, len(q_relation))
            entries.extend(
                (span, origin, key, overlap, len(q_words & local) / max(1, len(q_words)), relation)
                for span, origin, key, local in _spans(sentence)
            )
        for position, (span, origin, key, overlap, local, relation) in enumerate(entries):
            if not key:
                continue
            s = stats.setdefault(
                key,
                {
                    "text": span,
                    "origin": origin,
                    "latest": False,
                    "rank": 99,
                    "freq": 0,
                    "overlap": 0.0,
                    "position": position,
                    "local": 0.0,
                    "relation": 0.0,
                },
            )
            if origin == "title":
                s["origin"], s["text"] = "title", span
            s["latest"] |= doc.block == latest_block
            if doc.rank < s["rank"] or (doc.rank == s["rank"] and doc.block > s.get("block", -1)):
                s["position"] = position
            s["block"] = max(s.get("block", -1), doc.block)
            s["rank"] = min(s["rank"], doc.rank)
            s["freq"] += 1
            s["overlap"] = max(s["overlap"], overlap)
            s["local"] = max(s["local"], local)
            s["relation"] = max(s["relation"], relation)

    def make(kind: str, key: str) -> Candidate:
        s = stats[key]
        return Candidate(
            kind,
            s["text"],
            s["origin"],
            bool(s["latest"]),
            int(s["rank"]),
            int(s["freq"]),
            float(s["overlap"]),
            key in titles,
            int(s["position"]),
            float(s["local"]),
            float(s["relation"]),
        )

    def rank_key(key: str) -> tuple:  # top-ranked documents of every search first, then by position in the text
        s = stats[key]
        return (s["rank"], -s["block"], s["position"], key)

    # -- queries ------------------------------------------------------------------------------------------------
    queries: list[Candidate] = []
    seen: set[str] = set(searched_keys)
    for text, origin in [(question.rstrip("?").strip(), "question")] + [
        (e, "question_entity") for e in question_entities(question)
    ]:
        key = asearcher_normalize(text)
        if key and key not in seen:
            seen.add(key)
            queries.append(Candidate(SEARCH, text, origin))
    doc_keys = sorted((k for k, s in stats.items() if s["origin"] in ("title", "span")), key=rank_key)
    for key in doc_keys:
        if len(queries) >= max_queries:
            break
        if key not in seen and key not in q_lower:
            seen.add(key)
            queries.append(make(SEARCH, key))
    queries = queries[:max_queries]

    # -- answers ------------------------------------------------------------------------------------------------
    answers: list[Candidate] = []
    if docs:
        answers = [Candidate(ANSWER, "yes", "polar"), Candidate(ANSWER, "no", "polar")]
        used = {"yes", "no"}
        for entity in question_entities(question):  # comparison questions answer with one of the question's entities
            key = asearcher_normalize(entity)
            if key and key not in used:
                used.add(key)
                answers.append(make(ANSWER, key) if key in stats else Candidate(ANSWER, entity, "question_entity"))
        for key in sorted(stats, key=rank_key):
            if len(answers) >= max_answers:
                break
            if key in used or key in q_lower:
                continue
            used.add(key)
            answers.append(make(ANSWER, key))
    answers = answers[:max_answers]

    ordered = queries + answers
    return sorted(ordered, key=lambda c: _shuffle_key(shuffle_seed, c.render()))


# -- features ---------------------------------------------------------------------------------------------------
ORIGINS: tuple[str, ...] = ("question", "question_entity", "title", "span", "date", "number", "noun", "polar")
#: names of the per-candidate feature columns (the policy network's input); ``hint_*`` columns are 0 without a hint
FEATURE_NAMES: tuple[str, ...] = (
    "is_search",
    "is_answer",
    *(f"origin_{o}" for o in ORIGINS),
    "latest",
    "rank_1",
    "rank_2",
    "rank_3plus",
    "frequency",
    "context_overlap",
    "is_title",
    "in_question",
    "question_word_share",
    "length",
    "position",
    "is_year",
    "capitalised_words",
    "local_overlap",
    "relation_overlap",
    *(f"wh_{w}" for w in ("who", "when", "where", "what", "which", "how_many", "how", "polar")),
    "turn_0",
    "turn_1",
    "turn_2",
    "turn_3plus",
    "searches",
    "last_turn",
    "question_length",
    "question_entities",
    "comparison_question",
    "best_answer_context",
    "latest_answer_context",
    "blocks",
    "hint_present",
    "hint_similarity",
    "hint_best",
    "hint_any_similarity",
)
HINT_COLUMNS: tuple[int, ...] = tuple(i for i, n in enumerate(FEATURE_NAMES) if n.startswith("hint_"))
_WH = (
    ("who", re.compile(r"\b(?:who|whom|whose)\b", re.I)),
    ("when", re.compile(r"\bwhen\b|\bwhat year\b|\bwhat date\b", re.I)),
    ("where", re.compile(r"\bwhere\b", re.I)),
    ("what", re.compile(r"\bwhat\b", re.I)),
    ("which", re.compile(r"\bwhich\b", re.I)),
    ("how_many", re.compile(r"\bhow (?:many|much)\b", re.I)),
    ("how", re.compile(r"\bhow\b", re.I)),
    ("polar", re.compile(r"^\s*(?:is|are|was|were|did|does|do|can|has|have|could|will)\b", re.I)),
)
_YEAR = re.compile(r"^(?:1\d{3}|20\d{2})$")
_COMPARISON = re.compile(r"\b(?:or|both|same|earlier|later|older|younger|first|longer|more|higher|larger)\b", re.I)


def hint_pointer(hint: Sequence[PlanAction], taken: Sequence[PlanAction], threshold: float = 0.5) -> int:
    """Index of the first hint action the agent has not carried out yet: hint actions are matched in order by
    taken actions of the same name whose argument is similar enough (the agent may take extra actions between)."""
    pointer = 0
    for action in taken:
        if pointer >= len(hint):
            break
        target = hint[pointer]
        if action.name == target.name and similarity(action.text, target.text) >= threshold:
            pointer += 1
    return pointer


def candidate_features(
    candidates: Sequence[Candidate],
    question: str,
    turn: int,
    searches: int,
    turns_left: int,
    hint: Sequence[PlanAction] = (),
    taken: Sequence[PlanAction] = (),
) -> np.ndarray:
    """A ``[len(candidates), len(FEATURE_NAMES)]`` float32 matrix. Hint columns compare each candidate with the
    next hint action not yet carried out (``hint_pointer``) and with every hint action of its kind."""
    n = len(candidates)
    out = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float32)
    if n == 0:
        return out
    q_norm = f" {asearcher_normalize(question)} "
    q_words = content_words(question)
    entities = question_entities(question)
    glob = [
        float(turn == 0),
        float(turn == 1),
        float(turn == 2),
        float(turn >= 3),
        min(searches, 5) / 5.0,
        float(turns_left <= 1),
        min(len(words(question)), 40) / 40.0,
        min(len(entities), 4) / 4.0,
        float(bool(_COMPARISON.search(question)) and len(entities) >= 2),
        # set-level cues for "answer now or search on": how well the best answer candidate's sentence covers the
        # question (over all results, and over the latest search's), and how many searches returned results
        max((c.context_overlap for c in candidates if c.kind == ANSWER), default=0.0),
        max((c.context_overlap for c in candidates if c.kind == ANSWER and c.latest), default=0.0),
        min(max((c.best_rank > 0) * 1 for c in candidates) * searches, 5) / 5.0,
    ]
    wh = [float(bool(pattern.search(question))) for _, pattern in _WH]
    pointer = hint_pointer(hint, taken) if hint else 0
    nxt = hint[pointer] if hint and pointer < len(hint) else None
    for i, c in enumerate(candidates):
        cw = content_words(c.text) or set(words(c.text))
        row = [
            float(c.kind == SEARCH),
            float(c.kind == ANSWER),
            *(float(c.origin == o) for o in ORIGINS),
            float(c.latest),
            float(c.best_rank == 1),
            float(c.best_rank == 2),
            float(c.best_rank >= 3),
            min(np.log1p(c.frequency) / 3.0, 1.0),
            c.context_overlap,
            float(c.in_title),
            float(f" {asearcher_normalize(c.text)} " in q_norm),
            len(cw & q_words) / max(1, len(cw)),
            min(len(words(c.text)), 10) / 10.0,
            min(c.position, 30) / 30.0,
            float(bool(_YEAR.match(c.text.strip()))),
            min(sum(w[:1].isupper() for w in c.text.split()), 4) / 4.0,
            c.local_overlap,
            c.relation_overlap,
            *wh,
            *glob,
        ]
        out[i, : len(row)] = row
    if nxt is not None:
        col = {
            name: FEATURE_NAMES.index(name)
            for name in ("hint_present", "hint_similarity", "hint_best", "hint_any_similarity")
        }
        sims = np.array(
            [similarity(c.text, nxt.text) if c.kind == nxt.name else 0.0 for c in candidates], dtype=np.float32
        )
        out[:, col["hint_present"]] = 1.0
        out[:, col["hint_similarity"]] = sims
        if sims.max() > 0:
            out[sims == sims.max(), col["hint_best"]] = 1.0
        for i, c in enumerate(candidates):
            same = [similarity(c.text, a.text) for a in hint if a.name == c.kind]
            out[i, col["hint_any_similarity"]] = max(same, default=0.0)
    return out
