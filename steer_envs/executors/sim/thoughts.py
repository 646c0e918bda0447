"""What the simulated searcher *says*: reasoning sentences mined from real recorded agents.

A simulator that writes its own sentences for its own hidden states leaks them: "let me search again to make sure"
said only when it drifts into a loop is a label, not behaviour. Here every ``<think>`` text comes from the real
rollouts in ``trajectories/`` and is chosen by the *observable* situation of the turn alone (:mod:`.situation`), so
whatever the words reveal, the transcript around them already revealed.

Mining (once per data folder, cached): every turn of every recorded rollout is parsed
(:func:`~steer_envs.executors.transcript.parse_rollout`); its reasoning text is cut into sentences; in each
sentence the spans the agent copied from its own context become slots — its query ``{query}``, its answer
``{answer}``, a retrieved title ``{title}``, a phrase of the question ``{topic}`` — and a sentence is kept only if
nothing episode-specific is left outside the slots (no other capitalised name, no number) and it says something
about the search (a slot, or a first-person step such as "I need to find"). A turn whose text was empty in the
recording contributes an empty template, so the simulator is as terse as the agent it imitates. Search turns never
keep ``{answer}`` (the agent's private guess would be hidden state).

At run time the slots are filled with the episode's own observable text: the query it is issuing, the answer it
is giving, a title from its last results, the question's core phrase.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.trajectories import RecordedRollout, load_rollouts, trajectory_files
from ...paths import cache_dir, file_fingerprint, resolve_data_dir
from ..transcript import RecordedTurn, parse_rollout
from .situation import Situation, content_words, situation_of

MINER_VERSION = 4
SLOTS: tuple[str, ...] = ("query", "answer", "title", "topic")
MAX_SENTENCES = 2
#: a word is the agent's own idiom (not its episode's subject) if this share of its rollouts use it
COMMON_SHARE = 0.01
_SENTENCE = re.compile(r"(?<=[.!?:])\s+(?=[A-Z\"'(])")
_MARKUP = re.compile(r"<\|?[^<>]{0,40}\|?>|\\boxed\{[^{}]*\}|\*\*|#+ ")
_SLOT = re.compile(r"\{(" + "|".join(SLOTS) + r")\}")
_FIRST_PERSON = re.compile(r"\b(?:I need|I will|I'll|I should|I must|let me|let's|I can|I have to|I want)\b", re.I)
_FIRST_PERSON_WORDS = frozenset({"I", "I'll", "I'm", "I've", "I'd"})
_QUESTION_HEAD = re.compile(
    r"^(?:who|whom|whose|what|which|when|where|why|how(?: many| much| long| old)?)\s+"
    r"(?:is|was|are|were|did|does|do|has|had|have|can|could|will|would)?\s*",
    re.I,
)


def _reasoning_text(turn: RecordedTurn) -> str:
    """The model's words before its action: the ``<think>`` block, or (R1-Searcher) the text before its marker."""
    text = turn.think
    if not text:
        text = turn.segment
        for marker in ("<|begin_of_query|>", "<search>", "<answer>", "<information>", "\\boxed"):
            cut = text.find(marker)
            if cut >= 0:
                text = text[:cut]
    return " ".join(_MARKUP.sub(" ", text).split())


def _question_spans(question: str) -> list[str]:
    """Restatements of the question an agent copies into its reasoning: word n-grams (3+ words) that carry at
    least half of its content words, longest first. Shorter fragments stay words (and usually fail the checks)."""
    toks = question.rstrip("?").split()
    goal = content_words(question)
    spans = (" ".join(toks[i : i + n]) for n in range(len(toks), 2, -1) for i in range(len(toks) - n + 1))
    return [s for s in spans if goal and len(content_words(s) & goal) >= max(2, len(goal) / 2)]


def _replace(sentence: str, span: str, slot: str) -> str:
    if len(span) < 3:
        return sentence
    return re.sub(r"(?i)(?<![\w{])" + re.escape(span) + r"(?![\w}])", "{" + slot + "}", sentence)


def slotify(
    sentence: str,
    question: str,
    query: str | None,
    answer: str | None,
    titles: Sequence[str],
    common: frozenset[str] | None = None,
) -> str | None:
    """The sentence as a template, or ``None`` if it still names something of its own episode. ``common``: the
    words an agent of this source uses across many questions; any other content word left outside the slots is
    about this episode's subject (cricket, glycogen, ...) and the sentence is dropped."""
    s = sentence
    if query and len(query.split()) >= 2:
        s = _replace(s, query, "query")
    if answer:
        s = _replace(s, answer, "answer")
    for title in sorted(titles, key=len, reverse=True):
        s = _replace(s, title, "title")
    for span in _question_spans(question):
        s = _replace(s, span, "topic")
    s = " ".join(s.split())
    slots = _SLOT.findall(s)
    if max((slots.count(slot) for slot in SLOTS), default=0) > 1 or re.search(r"\}\W{0,3}\{", s):
        return None  # a question cut into fragments: no coherent sentence once filled with another question
    bare = _SLOT.sub(" ", s)
    if re.search(r"[<>{}\[\]\\|#]|\d", bare):
        return None
    words = bare.split()
    for i, w in enumerate(words):
        if (
            i > 0
            and w[:1].isupper()
            and w.strip("\"'(,") not in _FIRST_PERSON_WORDS
            and not words[i - 1].endswith((".", ":", "!", "?"))
        ):
            return None  # a name the slots did not cover
    if not 4 <= len(s.split()) <= 40:
        return None
    if common is not None and content_words(bare) - common:
        return None
    if not slots and not _FIRST_PERSON.search(s):
        return None  # facts about some other question's subject
    return s


def template_of_turn(
    turn: RecordedTurn, question: str, last_titles: Sequence[str], common: frozenset[str] | None = None
) -> str | None:
    """The template a recorded turn contributes: ``""`` if it said nothing, ``None`` if nothing usable remains."""
    text = _reasoning_text(turn)
    if not text:
        return ""
    answer = turn.answer if turn.kind == "answer" else None
    kept = []
    for sentence in _SENTENCE.split(text):
        template = slotify(sentence.strip(), question, turn.query, answer, last_titles, common)
        if template and (turn.kind == "answer" or "{answer}" not in template):
            kept.append(template)
        if len(kept) == MAX_SENTENCES:
            break
    return " ".join(kept) if kept else None


def common_words(rollouts: Sequence[RecordedRollout], share: float = COMMON_SHARE) -> frozenset[str]:
    """Content words that occur in the reasoning of at least ``share`` of the rollouts (the agent's own idiom)."""
    counts: Counter[str] = Counter()
    for rollout in rollouts:
        counts.update(content_words(" ".join(_reasoning_text(t) for t in parse_rollout(rollout))))
    least = max(2, share * len(rollouts))
    return frozenset(w for w, c in counts.items() if c >= least)


def mine_source(source: str, data_dir: str | None = None) -> dict[str, list[str]]:
    """Templates of one trajectory source, by situation key (most specific key only)."""
    bank: dict[str, list[str]] = defaultdict(list)
    rollouts = load_rollouts(source, data_dir)
    common = common_words(rollouts)
    for rollout in rollouts:
        queries: list[str] = []
        last_titles: list[str] = []
        proposed = False
        for turn in parse_rollout(rollout):
            if turn.kind not in ("search", "answer", "invalid"):
                continue
            situation = situation_of(
                rollout.question, turn.kind, turn.index, turn.query, queries, last_titles, proposed
            )
            template = template_of_turn(turn, rollout.question, last_titles, common)
            if template is not None:
                bank[situation.keys()[0]].append(template)
            if turn.kind == "search":
                queries.append(turn.query or "")
                last_titles = [d.title for d in turn.documents if d.title]
    return dict(bank)


@dataclass
class ThoughtBank:
    """Templates by situation key (every back-off level), for one set of trajectory sources."""

    sources: tuple[str, ...]
    by_key: dict[str, tuple[str, ...]]

    @classmethod
    def from_mined(cls, sources: Sequence[str], mined: Sequence[dict[str, list[str]]]) -> ThoughtBank:
        by_key: dict[str, list[str]] = defaultdict(list)
        for bank in mined:
            for key, templates in bank.items():
                for level in _back_off(key):
                    by_key[level].extend(templates)
        return cls(tuple(sources), {k: tuple(sorted(v)) for k, v in by_key.items()})

    def __len__(self) -> int:
        return sum(len(v) for k, v in self.by_key.items() if k.count("|") == 4)

    def choose(self, situation: Situation, rng: np.random.Generator) -> str:
        """A template for ``situation`` (uniform among those of the most specific key that has any)."""
        for key in situation.keys():
            options = self.by_key.get(key)
            if options:
                return options[int(rng.integers(len(options)))]
        return ""


def _back_off(key: str) -> list[str]:
    """All keys of :meth:`Situation.keys` that a most-specific key maps to."""
    act, turn, repeat, overlap, proposed = key.split("|")
    return [key, f"{act}|{turn}|{repeat}|{overlap}", f"{act}|{turn}|{overlap}", f"{act}|{turn}", act]


def fill(
    template: str, question: str, query: str | None = None, answer: str | None = None, titles: Sequence[str] = ()
) -> str:
    """The template with the episode's own observable text in its slots."""
    if not template:
        return ""
    values = {
        "query": query or question_core(question),
        "answer": answer or "",
        "title": titles[0] if titles else question_core(question),
        "topic": question_core(question),
    }
    return _SLOT.sub(lambda m: values[m.group(1)], template)


def question_core(question: str) -> str:
    """The question as a noun phrase: 'who was the first mayor of X?' -> 'the first mayor of X'."""
    core = _QUESTION_HEAD.sub("", question.strip()).rstrip(" ?.")
    return core or question.strip().rstrip(" ?.")


_BANKS: dict[tuple, ThoughtBank | None] = {}


def load_thought_bank(sources: Sequence[str], data_dir: str | None = None) -> ThoughtBank | None:
    """The bank of ``sources`` (mined once per file version, cached on disk, memoised per process); ``None`` if none
    of them is in the data folder (the simulator then writes no ``<think>`` text, with a warning)."""
    memo = (tuple(sources), str(resolve_data_dir(data_dir)))
    if memo not in _BANKS:
        files = trajectory_files(data_dir)
        present = [s for s in sources if s in files]
        missing = [s for s in sources if s not in files]
        if missing:
            warnings.warn(
                f"the simulator's thought sources {missing} are not in {memo[1]}/trajectories; it draws "
                f"its words from {present or 'nothing (no <think> text)'}",
                stacklevel=3,
            )
        mined = [_mined(source, files[source], data_dir) for source in present]
        _BANKS[memo] = ThoughtBank.from_mined(present, mined) if present else None
    return _BANKS[memo]


def _mined(source: str, path: Path, data_dir: str | None) -> dict[str, list[str]]:
    cached = cache_dir("thoughts") / f"{source}-{file_fingerprint(path, extra=f'thoughts-v{MINER_VERSION}')}.json"
    if cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    bank = mine_source(source, data_dir)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(bank, sort_keys=True), encoding="utf-8")
    tmp.replace(cached)  # atomic: concurrent processes never read a half-written file
    return bank
