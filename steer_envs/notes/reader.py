"""Reading a supervisor's note by meaning: which intent it expresses, how confidently, and its argument.

The note is embedded with MiniLM (:mod:`.encoder`) and compared with the prototypes of the intent set
(:mod:`.intents`) through a multinomial logistic regression fitted on the prototypes' embeddings (a linear probe,
:mod:`.probe`: nearest-prototype matching confuses "answer now" with "don't answer yet", whose embeddings are close;
a probe learns the directions that separate them). Its probability of the chosen intent is the reading's
confidence. A note far from every prototype (cosine similarity below :data:`MIN_SIMILARITY`), or read as ``none``, is
not actionable.
Every string has a defined reading: empty, huge, binary-looking or hostile text included.

The argument of an intent that takes one (``search_for``) is the note's payload: the text after a colon, or after
the search verb ("look up X", "search for X"). A search request with no payload is a request to keep searching.

Readings are cached per text; a reader is deterministic (same text, same reading, in every process).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np

from .encoder import MiniLMEncoder, shared_encoder
from .intents import NONE, IntentSet, get_intent_set
from .memo import TextMemo
from .probe import LinearProbe, fitted_probe

#: inverse regularisation of the probe (chosen on the development paraphrases)
PROBE_C = 30.0
#: below this cosine similarity to every prototype, a note is not read as any intent
MIN_SIMILARITY = 0.30
MAX_ARGUMENT_WORDS = 32
#: a search request in imperative position: "search for X", "please look up X", "try a search on X", "query X"
_SEARCH_VERB = re.compile(
    r"^\s*(?:(?:please|now|then|so|and|just|maybe|you\s+(?:could|should|might|can|need\s+to|must)|try(?:\s+to)?|go\s+and)[\s,]+)*"
    r"(?:(?:do|run|try|make|perform)\s+(?:a|another|one\s+more)\s+search\s+(?:for|on|about|of)"
    r"|(?:keep|continue)\s+(?:on\s+)?search(?:ing)?\s+(?:for|about|on)"
    r"|search(?:ing)?(?:\s+(?:for|about|on))?|look(?:ing)?\s+up|look\s+for|query|google|find\s+out(?:\s+about)?"
    r"|find(?:\s+information\s+(?:about|on))?)(?=[\s:])\s*:?\s*(?P<arg>.+)$",
    re.I | re.S,
)
_SEARCH_WORD = re.compile(r"\b(?:search\w*|look(?:ing)?\s+up|look\s+for|query|google|find)\b", re.I)
#: intents whose notes carry a payload (read also with the payload cut off)
_PAYLOAD_INTENTS = frozenset({"search_for", "keep_searching"})
_NOT_AN_ARGUMENT = re.compile(
    r"^(?:(?:some|a\s+bit|a\s+little|any)\s+)?(?:more|again|further|it|that|this|something)\b", re.I
)


@dataclass(frozen=True)
class Reading:
    """What a note means to an agent. ``confidence``: probability of ``intent`` among all intents."""

    intent: str
    confidence: float
    argument: str = ""
    similarity: float = 0.0

    @property
    def actionable(self) -> bool:
        return self.intent != NONE


def note_argument(text: str) -> str:
    """The payload of a search request: after a colon that follows a search verb ("Search for: X", "Query: X"), else
    after the verb itself ("look up X"); '' if there is none."""
    head, sep, tail = text.partition(":")
    candidate = tail if sep and tail.strip() and len(head.split()) <= 6 and _SEARCH_WORD.search(head) else ""
    if not candidate:
        m = _SEARCH_VERB.search(text)
        candidate = m.group("arg") if m else ""
    words = candidate.strip().strip(" .!?\"':;,").split()[:MAX_ARGUMENT_WORDS]
    while words and words[0].lower().strip(":") in ("for", "about", "on"):
        words = words[1:]
    argument = " ".join(words).strip(" .!?\"':;,")
    if not any(ch.isalnum() for ch in argument) or _NOT_AN_ARGUMENT.match(argument):
        return ""
    return argument


class NoteReader:
    """Maps any note to a :class:`Reading` within one intent set."""

    def __init__(
        self, intent_set: str | IntentSet = "searcher", encoder: MiniLMEncoder | None = None, cache_size: int = 50_000
    ) -> None:
        self.intent_set = get_intent_set(intent_set) if isinstance(intent_set, str) else intent_set
        self._encoder = encoder
        self._prototypes: np.ndarray | None = None
        self._probe: LinearProbe | None = None  # fitted on first use (_fit)
        self._cache_size = cache_size
        self._memo: TextMemo[Reading] = TextMemo(cache_size)
        self._fit_lock = threading.Lock()

    @property
    def encoder(self) -> MiniLMEncoder:
        if self._encoder is None:
            self._encoder = shared_encoder()
        return self._encoder

    def __getstate__(self) -> dict:
        return {"intent_set": self.intent_set, "cache_size": self._cache_size}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["intent_set"], None, state["cache_size"])

    def _fit(self) -> None:
        """Fit the probe once. Why the lock and the local build: threads reading a fresh reader at once must never
        see the prototypes without the probe (double-checked: after the first fit, no lock is taken)."""
        if self._probe is not None:
            return
        with self._fit_lock:
            if self._probe is not None:
                return
            sentences, labels = [], []
            for spec in self.intent_set.intents:
                for sentence in spec.prototypes:
                    sentences.append(sentence)
                    labels.append(spec.name)
            prototypes = self.encoder.encode_stored(sentences)  # from the disk cache after the first process
            probe = fitted_probe(prototypes, labels, PROBE_C)  # from the disk cache after the first process
            self._prototypes = prototypes
            self._probe = probe  # assigned last: a reader that sees the probe sees the prototypes too

    def probabilities(self, text: str) -> tuple[dict[str, float], float]:
        """(probability of each intent, best cosine similarity to any prototype).

        A note that carries a payload ("Search: height of Mount Everest") is also read with the payload cut off,
        and the search intents take the better of the two readings, so that the request is read as a request and
        not as a remark about Everest; every other intent is read from the note as written."""
        self._fit()
        probe, prototypes = self._probe, self._prototypes
        assert probe is not None and prototypes is not None  # _fit set both
        vector = self.encoder.encode(text)
        classes = list(probe.classes)
        probs = probe.predict_proba(vector[None])[0]
        similarity = float((prototypes @ vector).max())
        payload = note_argument(text)
        if payload:
            bare = self.encoder.encode(text.replace(payload, "", 1).strip())
            bare_probs = probe.predict_proba(bare[None])[0]
            for intent in _PAYLOAD_INTENTS & set(classes):
                k = classes.index(intent)
                probs[k] = max(probs[k], bare_probs[k])
            probs = probs / probs.sum()
            similarity = max(similarity, float((prototypes @ bare).max()))
        return dict(zip(classes, map(float, probs))), similarity

    def read(self, text: object) -> Reading:
        text = "" if text is None else str(text)
        return self._memo(text, self._read)

    def _read(self, text: str) -> Reading:
        if not text.strip():
            return Reading(NONE, 1.0)
        probs, similarity = self.probabilities(text)
        intent = max(probs, key=probs.__getitem__)
        confidence = probs[intent]
        if similarity < MIN_SIMILARITY:
            return Reading(NONE, confidence, similarity=similarity)
        argument = ""
        if intent != NONE and self.intent_set[intent].takes_argument:
            argument = note_argument(text)
            if not argument and "keep_searching" in probs:
                intent = "keep_searching"  # "search!" with nothing to search for asks to keep searching
        elif intent == "keep_searching" and "search_for" in probs:
            argument = note_argument(text)
            if argument:
                intent = "search_for"  # "keep searching for the author's birthplace" names what to search
        return Reading(intent, confidence, argument, similarity)

    def read_in_context(self, text: object, goal: str) -> Reading:
        """Read a note addressed to an agent working on ``goal``: the goal quoted in the note is content, not an
        instruction ("Refocus on the goal: <the question>"), so it is read as "the question"; an argument (what to
        search for) is taken from the note as written."""
        text = "" if text is None else str(text)
        masked = _mask_goal(text, goal)
        if masked == text:
            return self.read(text)
        reading = self.read(masked)
        if reading.argument:
            return Reading(
                reading.intent, reading.confidence, note_argument(text) or reading.argument, reading.similarity
            )
        return reading


def _mask_goal(text: str, goal: str) -> str:
    core = goal.strip().rstrip("?.! ")
    if len(core.split()) < 3:
        return text
    return re.sub(re.escape(core) + r"\??", "the question", text, flags=re.I)


_READERS: dict[str, NoteReader] = {}
_READERS_LOCK = threading.Lock()


def shared_reader(intent_set: str = "searcher") -> NoteReader:
    """The process-wide reader of an intent set (its cache is shared by every env of the process)."""
    with _READERS_LOCK:
        if intent_set not in _READERS:
            _READERS[intent_set] = NoteReader(intent_set)
        return _READERS[intent_set]


def read_note(text: object, intent_set: str = "searcher") -> Reading:
    """Read ``text`` with the shared reader of ``intent_set``."""
    return shared_reader(intent_set).read(text)
