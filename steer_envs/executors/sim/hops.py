"""The hidden hop structure of a task, built from the task's own metadata.

Sources, in order of preference: a MuSiQue decomposition (sub-questions with their answers and supporting
passages), 2WikiMultihopQA evidence triples, the supporting passages' titles, and otherwise a single hop whose
evidence is any answer-bearing passage. The plan is ground truth: it steers the simulator's queries and what
counts as evidence, and never appears in the transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...data.records import Task
from ...data.tasks import MULTI_HOP
from ...text import RELATION_STOP_WORDS
from ...text import tokens as _tokens

_REF = re.compile(r"#(\d+)")


@dataclass(frozen=True)
class Hop:
    """One step of the reasoning chain. ``query`` may contain ``#k`` placeholders for earlier hops' findings;
    ``target_ids`` are passages that resolve the hop; ``finding`` is what resolving it reveals (the bridge
    entity, or the answer for the last hop)."""

    query: str
    target_ids: tuple[str, ...]
    finding: str


def _clean_musique(q: str) -> str:
    return q.replace(">>", " ").strip()


def _evidence_hops(task: Task, titles: dict[str, str]) -> list[Hop] | None:
    """2Wiki triples ``[subject, relation, object]``: query 'subject relation', finding 'object'. Each hop's evidence
    is the supporting passage about its subject (supporting ids are not in hop order)."""
    if not task.evidences or not task.supporting_ids:
        return None
    hops = []
    support = list(task.supporting_ids)
    for i, (subject, relation, obj) in enumerate(task.evidences):
        about = [pid for pid in support if _named_in(titles.get(pid, ""), subject)]
        target = about[0] if about else support[min(i, len(support) - 1)]
        hops.append(Hop(f"{subject} {relation}", (target,), obj))
    last = hops[-1]
    hops[-1] = Hop(last.query, tuple(dict.fromkeys(last.target_ids + task.answer_bearing_ids)), task.golden_answers[0])
    return hops


def build_hops(task: Task, titles: dict[str, str]) -> list[Hop]:
    """The hop plan of ``task``. ``titles`` maps passage ids to titles (bridge entities of title chains)."""
    answer = task.golden_answers[0]
    final_targets = tuple(dict.fromkeys(task.answer_bearing_ids + task.supporting_ids[-1:]))
    if task.decomposition:
        hops = []
        for sub in task.decomposition:
            targets = (sub.supporting_id,) if sub.supporting_id else ()
            hops.append(Hop(_clean_musique(sub.question), targets, sub.answer or answer))
        last = hops[-1]
        hops[-1] = Hop(last.query, tuple(dict.fromkeys(last.target_ids + task.answer_bearing_ids)), answer)
        return hops
    from_evidence = _evidence_hops(task, titles)
    if from_evidence:
        return from_evidence
    multi = task.benchmark in MULTI_HOP or (task.hops or 1) > 1
    if multi and len(task.supporting_ids) >= 2:
        compared = _comparison_hops(task, titles)
        if compared:
            return compared
        # title chain: hop 1 finds the first supporting passage, whose title is the bridge to the next
        hops = []
        support = list(task.supporting_ids)
        for i, pid in enumerate(support[:-1]):
            bridge = titles.get(support[i + 1], "")
            query = task.question if i == 0 else f"{titles.get(pid, '')} #{i}"
            hops.append(Hop(query, (pid,), bridge))
        hops.append(Hop(f"#{len(support) - 1} {task.question}", final_targets or (support[-1],), answer))
        return hops
    if multi and not task.supporting_ids:
        # no structure recorded (Bamboogle): an implicit first hop resolved by reasoning over any result
        return [Hop(task.question, (), ""), Hop(f"#1 {task.question}", final_targets, answer)]
    return [Hop(task.question, final_targets, answer)]


def _named_in(title: str, question: str) -> bool:
    """Whether the question names the passage's subject (most of the title's words, parentheses aside)."""
    words = _tokens(re.sub(r"\(.*?\)", " ", title).lower())
    asked = set(_tokens(question.lower()))
    return bool(words) and sum(w in asked for w in words) >= max(1, 0.6 * len(words))


def _comparison_hops(task: Task, titles: dict[str, str]) -> list[Hop] | None:
    """A comparison ("which film's director was born first, A or B?"): each entity the question names is looked up
    on its own (its title plus the asked relation); with both in hand the agent answers. Supporting passages the
    question does not name (the directors) count as evidence for the last hop, as real agents compare from what
    the named entities' passages say. ``None`` unless the question names two supporting passages' subjects."""
    support = list(task.supporting_ids)
    named = [pid for pid in support if _named_in(titles.get(pid, ""), task.question)]
    if len(named) < 2:
        return None
    title_words = {w for pid in named for w in _tokens(titles.get(pid, "").lower())}
    relation = " ".join(
        w for w in _tokens(task.question.lower()) if w not in title_words and w not in RELATION_STOP_WORDS
    )[:60]
    hops = [Hop(f"{titles.get(pid, '')} {relation}".strip(), (pid,), titles.get(pid, "")) for pid in named]
    unnamed = tuple(pid for pid in support if pid not in named)
    last = hops[-1]
    hops[-1] = Hop(
        last.query, tuple(dict.fromkeys(last.target_ids + unnamed + task.answer_bearing_ids)), task.golden_answers[0]
    )
    return hops


def is_choice(task: Task, hops: list[Hop]) -> bool:
    """Whether the answer is one of two options the question names (yes/no, or A vs B): a guess is right half the
    time."""
    answer = task.golden_answers[0].strip().lower()
    if answer in ("yes", "no"):
        return True
    return len(hops) >= 2 and " or " in task.question.lower() and answer in task.question.lower()


def fill_query(template: str, findings: list[str]) -> str:
    """Replace ``#k`` with the k-th hop's finding (as known to the agent, which may be wrong)."""

    def sub(m: re.Match) -> str:
        k = int(m.group(1)) - 1
        return findings[k] if 0 <= k < len(findings) else ""

    return " ".join(_REF.sub(sub, template).split())
