"""Catalogues of intervention templates: what a discrete action means.

Each catalogue is a tuple of :class:`InterventionTemplate` records; index 0 is always the no-op (pass / no plan
/ accept). Templates may have slots filled from the observation (never from hidden state): ``{question}`` the
goal, ``{last_query}`` the executor's latest query, ``{new_title}`` a document title from the latest results that
the executor has not searched yet. Agents read ``env.unwrapped.catalogue`` to get names, texts and slots, and
text-mode agents may use :meth:`InterventionTemplate.fill` to ground their own notes.

Filled arguments come after a ':' so the simulator's intent grammar reads only the template's head.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Literal

from ..executors.protocol import information_titles, searched_queries

TemplateKind = Literal["pass", "note", "reject"]


@dataclass(frozen=True)
class InterventionTemplate:
    name: str
    kind: TemplateKind
    template: str
    description: str

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(f[1] for f in string.Formatter().parse(self.template) if f[1])

    def fill(self, goal: str, transcript: str) -> str:
        """The note for this template given the observation's goal and transcript."""
        if not self.slots:
            return self.template
        values = {"question": goal}
        queries = searched_queries(transcript)
        values["last_query"] = queries[-1] if queries else goal
        values["new_title"] = _new_title(transcript, queries) or goal
        return self.template.format(**{k: values[k] for k in self.slots})


def _new_title(transcript: str, queries: list[str]) -> str:
    blocks = information_titles(transcript)
    searched = " ".join(queries).lower()
    for title in blocks[-1] if blocks else []:
        clean = re.sub(r'^"|"$', "", title).strip()
        if clean and clean.lower() not in searched:
            return clean
    return ""


STEERING: tuple[InterventionTemplate, ...] = (
    InterventionTemplate("pass", "pass", "", "no intervention"),
    InterventionTemplate("answer_now", "note", "You already have enough evidence. Give your final answer now.",
                         "stop searching and answer (hurts if the evidence is not in hand)"),
    InterventionTemplate("stop_repeating", "note", "Stop repeating searches you have already made.",
                         "break a loop of redundant searches"),
    InterventionTemplate("refocus", "note", "Refocus on the goal: {question}", "return from a side topic to the question"),
    InterventionTemplate("keep_searching", "note",
                         "The evidence so far does not answer the question; do not answer yet, keep searching.",
                         "prevent a premature answer"),
    InterventionTemplate("verify", "note", "Verify the evidence: re-read the retrieved documents and check that they answer the question.",
                         "re-examine what was retrieved"),
    InterventionTemplate("backtrack", "note", "Backtrack: the entity you are following may be the wrong one; reconsider it.",
                         "undo a hop resolved from a distractor (hurts if the entity was right)"),
    InterventionTemplate("search_question", "note", "Search for: {question}", "search the question itself"),
    InterventionTemplate("search_new_title", "note", "Search for: {new_title}",
                         "follow an entity from the latest results that has not been searched"),
)

PLANNING: tuple[InterventionTemplate, ...] = (
    InterventionTemplate("no_plan", "pass", "", "execute without a plan"),
    InterventionTemplate("plan_decompose", "note",
                         "Plan: break the question into sub-questions, search each in turn, answer only from evidence: {question}",
                         "decompose into hops"),
    InterventionTemplate("plan_search_first", "note", "Search for: {question}", "start by searching the question"),
    InterventionTemplate("plan_verify", "note", "Plan: first find evidence, then verify it against the question before answering: {question}",
                         "search, verify, then answer"),
)

VERIFICATION: tuple[InterventionTemplate, ...] = (
    InterventionTemplate("accept", "pass", "", "accept the proposed answer"),
    InterventionTemplate("reject_verify", "reject", "Check the documents again; the answer does not match the evidence.",
                         "reject: re-check the evidence"),
    InterventionTemplate("reject_search", "reject", "There is not enough evidence for this answer; search more.",
                         "reject: keep searching"),
    InterventionTemplate("reject_entity", "reject", "The answer may rest on the wrong entity; reconsider it.",
                         "reject: wrong bridge entity"),
)

CATALOGUES: dict[str, tuple[InterventionTemplate, ...]] = {
    "steering": STEERING, "planning": PLANNING, "verification": VERIFICATION,
}
