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
    InterventionTemplate(
        "answer_now",
        "note",
        "You already have enough evidence. Give your final answer now.",
        "stop searching and answer (hurts if the evidence is not in hand)",
    ),
    InterventionTemplate(
        "stop_repeating", "note", "Stop repeating searches you have already made.", "break a loop of redundant searches"
    ),
    InterventionTemplate(
        "refocus", "note", "Refocus on the goal: {question}", "return from a side topic to the question"
    ),
    InterventionTemplate(
        "keep_searching",
        "note",
        "The evidence so far does not answer the question; do not answer yet, keep searching.",
        "prevent a premature answer",
    ),
    InterventionTemplate(
        "verify",
        "note",
        "Verify the evidence: re-read the retrieved documents and check that they answer the question.",
        "re-examine what was retrieved",
    ),
    InterventionTemplate(
        "backtrack",
        "note",
        "Backtrack: the entity you are following may be the wrong one; reconsider it.",
        "undo a hop resolved from a distractor (hurts if the entity was right)",
    ),
    InterventionTemplate("search_question", "note", "Search for: {question}", "search the question itself"),
    InterventionTemplate(
        "search_new_title",
        "note",
        "Search for: {new_title}",
        "follow an entity from the latest results that has not been searched",
    ),
)

PLANNING: tuple[InterventionTemplate, ...] = (
    InterventionTemplate("no_plan", "pass", "", "execute without a plan"),
    InterventionTemplate(
        "plan_decompose",
        "note",
        "Plan: break the question into sub-questions, search each in turn, answer only from evidence: {question}",
        "decompose into hops",
    ),
    InterventionTemplate("plan_search_first", "note", "Search for: {question}", "start by searching the question"),
    InterventionTemplate(
        "plan_verify",
        "note",
        "Plan: first find evidence, then verify it against the question before answering: {question}",
        "search, verify, then answer",
    ),
)

VERIFICATION: tuple[InterventionTemplate, ...] = (
    InterventionTemplate("accept", "pass", "", "accept the proposed answer"),
    InterventionTemplate(
        "reject_verify",
        "reject",
        "Check the documents again; the answer does not match the evidence.",
        "reject: re-check the evidence",
    ),
    InterventionTemplate(
        "reject_search",
        "reject",
        "There is not enough evidence for this answer; search more.",
        "reject: keep searching",
    ),
    InterventionTemplate(
        "reject_entity",
        "reject",
        "The answer may rest on the wrong entity; reconsider it.",
        "reject: wrong bridge entity",
    ),
)

#: HandoffSteering-v0: a note is attached to the hand-off for its receiver; a rejection ("Reject: <feedback>") sends
#: the message back to its sender, who redoes its turn with the feedback
HANDOFF: tuple[InterventionTemplate, ...] = (
    InterventionTemplate("pass", "pass", "", "let the hand-off through"),
    InterventionTemplate(
        "reject_accept",
        "reject",
        "Reject: the answer is already supported by the evidence; accept it and pass it on.",
        "overrule a rejection (hurts when the claim is wrong)",
    ),
    InterventionTemplate(
        "reject_verify",
        "reject",
        "Reject: check that the answer is supported by a retrieved fact, then redo this step.",
        "send back for a check (a right claim may be dropped)",
    ),
    InterventionTemplate(
        "reject_evidence",
        "reject",
        "Reject: use the value extracted from the evidence, not your own memory.",
        "send an answer that ignores the evidence back",
    ),
    InterventionTemplate("reject_retry", "reject", "Reject: redo this step more carefully.", "generic retry"),
    InterventionTemplate(
        "note_accept",
        "note",
        "The answer is already supported by the evidence; accept it.",
        "tell the receiver the claim stands",
    ),
    InterventionTemplate(
        "note_keep_searching",
        "note",
        "The evidence is not sufficient yet; search for more before answering.",
        "ask for more evidence (hurts when the claim is right)",
    ),
    InterventionTemplate(
        "note_verify",
        "note",
        "Check that the answer is supported by a retrieved fact.",
        "ask for a check against the facts",
    ),
    InterventionTemplate(
        "note_use_evidence",
        "note",
        "Answer with the value extracted from the evidence, not from memory.",
        "ground the answer in the evidence",
    ),
    InterventionTemplate(
        "note_concise", "note", "Keep the final answer short: just the name or value.", "trim a padded answer"
    ),
    InterventionTemplate("note_refocus", "note", "Refocus on the goal: {question}", "a reminder of the shared goal"),
    InterventionTemplate(
        "note_decompose",
        "note",
        "Break the question into sub-questions and solve them in order.",
        "decompose a multi-hop question",
    ),
    InterventionTemplate(
        "note_stop_repeating",
        "note",
        "Stop repeating searches you have already made.",
        "break a searcher's loop (read as 'stop searching' when it is not looping)",
    ),
    InterventionTemplate(
        "note_backtrack",
        "note",
        "The entity you are following may be the wrong one; reconsider it.",
        "undo a fixation (a right finding is lost otherwise)",
    ),
    InterventionTemplate("note_search_question", "note", "Search for: {question}", "search the question itself"),
)

CATALOGUES: dict[str, tuple[InterventionTemplate, ...]] = {
    "steering": STEERING,
    "planning": PLANNING,
    "verification": VERIFICATION,
    "handoff": HANDOFF,
}
