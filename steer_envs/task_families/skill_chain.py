"""``skill_chain``: a synthetic family of chained lookups that the real benchmarks never reward.

Each task asks about something two links away from the person it names ("In which town is the registry that lists
the patron of Aldric Venhollow?"). Its documents are written so that the only way to the answer is a skill:

1. search the person; their document names the first link (``B1``) in a sentence that shares **no content word
   with the question**, deep in the lowest-ranked document;
2. carry that entity into the next search; its document names the second link (``B2``), again in a sentence with
   no word of the question;
3. search ``B2``; its document holds the answer, in a sentence that matches the question well.

Every search along the way also returns a *decoy*: a document that matches the question's words closely and names
a wrong town (the kind of candidate a policy trained on real questions learns to answer with). The answer appears
in no document but ``B2``'s, so an episode that does not carry both links into its searches cannot answer right.
The reference plan (the family's gold structure) is ``search P, search B1, search B2, answer A``.

What makes this a skill and not another multi-hop question: on real tasks the entity to search next sits in a
sentence that repeats the question's words (the film's director in the sentence about the film), and that is what
reinforcement on real tasks rewards; here the link is exactly the candidate those cues rank last. The skill is the
same on every task of the family (three wordings share it), so what guidance teaches on some tasks carries to the
others. The family is synthetic: made-up names on a made-up corpus of 5 documents per task, searched by its
own BM25 index; the real corpus and the real tasks are untouched.

Built deterministically from :data:`SEED`: the same tasks, documents and plans in every process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..data.corpus import Corpus
from ..data.records import Passage, Task
from ..errors import unknown_name
from ..reference_plans.records import PlanAction, ReferencePlan
from ..retrieval.base import Retriever
from ..text import CANDIDATE_STOP_WORDS, content_words

NAME = "skill_chain"
SEED = 20261204
#: tasks per split (train matches the RL pool's per-benchmark size, dev and test the evaluations')
SPLIT_SIZES: dict[str, int] = {"train": 150, "dev": 40, "test": 40}
SOURCE = "gold:chain"


@dataclass(frozen=True)
class Schema:
    """One wording of the chain. Placeholders: P (person), B1, B2 (the links), A (answer), D1, D2 (decoy towns),
    R (a place in the filler), Y1, Y2 (years). ``b1_kind`` / ``b2_kind`` say how a link's name is made."""

    name: str
    question: str
    person_doc: str  # its last sentence names B1 and shares no content word with the question
    person_decoy: str
    person_decoy_title: str
    link_doc: str  # its last sentence names B2 and shares no content word with the question
    link_decoy: str
    link_decoy_title: str
    answer_doc: str
    b1_kind: str
    b2_kind: str


SCHEMAS: tuple[Schema, ...] = (
    Schema(
        "registry",
        "In which town is the registry that lists the patron of {P}?",
        "{P} was a cartographer born in {Y1}. {P} drew charts of the {R} coast. "
        "Payment for those charts came from {B1}.",
        "The town registry of {D1} lists {P} among its patrons.",
        "{D1} town registry",
        "{B1} was a print shop founded in {Y2}. Its accounts were audited each winter by {B2}.",
        "The town registry of {D2} lists {B1} as a patron.",
        "{D2} town registry",
        "{B2} is the registry that lists patrons, kept in the town of {A}.",
        "org",
        "org",
    ),
    Schema(
        "guild",
        "Which city houses the guild that trained the mentor of {P}?",
        "{P} was a glassblower born in {Y1}. {P} sold bowls at the {R} fair. Eleven winters were spent beside {B1}.",
        "The guild of {D1} city trained {P} and named a mentor.",
        "{D1} city guild",
        "{B1} was a furnace keeper born in {Y2}. Apprenticeship papers were signed at {B2}.",
        "The guild of {D2} city trained {B1} as a mentor.",
        "{D2} city guild",
        "{B2} is the guild that trained mentors, housed in the city of {A}.",
        "person",
        "org",
    ),
    Schema(
        "harbour",
        "From which port did the ship that carried the cargo of {P} sail?",
        "{P} was a spice merchant born in {Y1}. {P} traded pepper along the {R} road. "
        "Sealed crates left the warehouse aboard {B1}.",
        "The port of {D1} shipped cargo for {P} on a sailing ship.",
        "{D1} port cargo",
        "{B1} was a barque launched in {Y2}. Its logbooks were filed with {B2}.",
        "The port of {D2} saw {B1} carry cargo and sail.",
        "{D2} port cargo",
        "{B2} records that the ship carrying the cargo sailed from the port of {A}.",
        "vessel",
        "org",
    ),
)

_ONSETS: tuple[str, ...] = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s", "st")
_ONSETS += ("t", "tr", "v", "w", "z", "th", "qu")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou")
_CODAS = ("n", "r", "l", "s", "th", "nd", "rm", "x", "ck", "")
_ORG_SUFFIXES = ("Works", "Hall", "Press", "Yard", "Lodge", "Office")
_TOWN_SUFFIXES = ("ford", "mere", "wick", "gate", "holm", "by")


class _Names:
    """Made-up names, each word used once in the whole family (so a search for one finds only its documents)."""

    def __init__(self, rng: np.random.Generator, reserved: set[str]) -> None:
        self.rng = rng
        self.used = set(reserved)

    def _pick(self, options: tuple[str, ...]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def word(self) -> str:
        while True:
            text = "".join(self._pick(_ONSETS) + self._pick(_VOWELS) + self._pick(_CODAS) for _ in range(2))
            if text not in self.used and 5 <= len(text) <= 11:
                self.used.add(text)
                return text.capitalize()

    def person(self) -> str:
        return f"{self.word()} {self.word()}"

    def org(self) -> str:
        return f"{self.word()} {self._pick(_ORG_SUFFIXES)}"

    def vessel(self) -> str:
        return f"{self.word()} {self.word()}"

    def town(self) -> str:
        while True:
            text = self._pick(_ONSETS) + self._pick(_VOWELS) + self._pick(_CODAS) + self._pick(_TOWN_SUFFIXES)
            if text not in self.used:
                self.used.add(text)
                return text.capitalize()

    def of_kind(self, kind: str) -> str:
        return {"person": self.person, "org": self.org, "vessel": self.vessel}[kind]()


@dataclass(frozen=True)
class ChainTask:
    """One task's gold structure: the task, its chain, its decoys and its documents."""

    task: Task
    person: str
    link1: str
    link2: str
    answer: str
    decoys: tuple[str, ...]
    passages: tuple[Passage, ...]

    @property
    def plan(self) -> ReferencePlan:
        actions = (
            PlanAction.search(self.person),
            PlanAction.search(self.link1),
            PlanAction.search(self.link2),
            PlanAction.answer(self.answer),
        )
        return ReferencePlan(self.task.id, actions, SOURCE)


def _build_task(schema: Schema, names: _Names, split: str, index: int, rng: np.random.Generator) -> ChainTask:
    slots = {
        "P": names.person(),
        "B1": names.of_kind(schema.b1_kind),
        "B2": names.of_kind(schema.b2_kind),
        "A": names.town(),
        "D1": names.town(),
        "D2": names.town(),
        "R": names.word(),
        "Y1": str(int(rng.integers(1700, 1850))),
        "Y2": str(int(rng.integers(1700, 1850))),
    }
    task_id = f"{NAME}-{split}-{index:04d}"
    docs = (
        (slots["P"], schema.person_doc),
        (schema.person_decoy_title.format(**slots), schema.person_decoy),
        (slots["B1"], schema.link_doc),
        (schema.link_decoy_title.format(**slots), schema.link_decoy),
        (slots["B2"], schema.answer_doc),
    )
    passages = tuple(Passage(f"{task_id}-p{j}", title, text.format(**slots)) for j, (title, text) in enumerate(docs))
    question = schema.question.format(**slots)
    task = Task(
        task_id,
        question,
        (slots["A"],),
        benchmark=NAME,
        split=split,
        passage_ids=tuple(p.id for p in passages),
        supporting_ids=(passages[0].id, passages[2].id, passages[4].id),
        answer_bearing_ids=(passages[4].id,),
        hops=3,
        meta={"family": NAME, "schema": schema.name},
    )
    decoys = (slots["D1"], slots["D2"], slots["R"])
    return ChainTask(task, slots["P"], slots["B1"], slots["B2"], slots["A"], decoys, passages)


def link_sentences(chain: ChainTask) -> tuple[str, str]:
    """The sentences that name the two links (the last sentence of the person's and of the first link's document)."""
    return chain.passages[0].text.rsplit(". ", 1)[-1], chain.passages[2].text.rsplit(". ", 1)[-1]


class SkillChainFamily:
    """The ``skill_chain`` family (see the module docstring): :data:`SPLIT_SIZES` tasks per split."""

    name = NAME
    benchmark = NAME
    retriever_key = f"family:{NAME}"

    @cached_property
    def chains(self) -> dict[str, ChainTask]:
        """Every task's chain, by task id, all splits (built once: names are unique across the whole family)."""
        rng = np.random.default_rng(SEED)
        template_words = {w for s in SCHEMAS for w in content_words(s.question, CANDIDATE_STOP_WORDS)}
        names = _Names(rng, template_words)
        out: dict[str, ChainTask] = {}
        for split, size in SPLIT_SIZES.items():
            for i in range(size):
                chain = _build_task(SCHEMAS[i % len(SCHEMAS)], names, split, i, rng)
                out[chain.task.id] = chain
        return out

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLIT_SIZES:
            raise unknown_name("split", split, list(SPLIT_SIZES))
        return [c.task for c in self.chains.values() if c.task.split == split]

    def owns(self, task_id: str) -> bool:
        return task_id.startswith(f"{NAME}-")

    def reference(self, task_id: str) -> ReferencePlan | None:
        chain = self.chains.get(task_id)
        return chain.plan if chain is not None else None

    def distractors(self, task_id: str) -> list[str]:
        chain = self.chains.get(task_id)
        return list(chain.decoys) if chain is not None else []

    @cached_property
    def corpus(self) -> Corpus:
        return Corpus([p for c in self.chains.values() for p in c.passages])

    def retriever(self) -> Retriever:
        return self._retriever

    @cached_property
    def _retriever(self) -> Retriever:
        from ..retrieval.bm25 import BM25sRetriever

        return BM25sRetriever(self.corpus, cache=False)


__all__ = ["NAME", "SCHEMAS", "SPLIT_SIZES", "ChainTask", "Schema", "SkillChainFamily", "link_sentences"]
