"""The Search-R1 / ASearcher text protocol, spoken by every executor.

One parser serves all executors (simulated, LLM, replay) so a steerer sees the same transcript shape whatever
produced it:

* ``<think>...</think>`` reasoning, ``<search>q</search>`` a query, ``<answer>a</answer>`` the final answer;
* search results come back as ``<information>Doc i(Title: t) text\\n...</information>``;
* an output with no valid action gets Search-R1's "My previous action is invalid..." reply;
* interventions enter the context as a ``<guidance>`` block (a note) or a rejection with feedback.

R1-Searcher's markers (``<|begin_of_query|>``, ``<|begin_of_documents|>``, ``\\boxed{}``) are parsed too, for
replaying its recorded rollouts.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..retrieval.base import Hit

INVALID_ACTION_REPLY = (
    "\nMy previous action is invalid. If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)
SEARCH_STOP = "</search>"
ANSWER_STOP = "</answer>"
STOP_SEQUENCES: tuple[str, ...] = (SEARCH_STOP, ANSWER_STOP)

ActionKind = Literal["search", "answer", "invalid"]

_SEARCH = re.compile(r"<search>(.*?)</search>", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)
_R1S_QUERY = re.compile(r"<\|begin_of_query\|>(.*?)<\|end_of_query\|>", re.S)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")


@dataclass(frozen=True)
class ParsedAction:
    """The action found in one generated segment (the first of search/answer that closes)."""

    kind: ActionKind
    think: str = ""
    query: str | None = None
    answer: str | None = None


def parse_action(segment: str) -> ParsedAction:
    """Parse one executor output segment (text up to and including its stop sequence).

    Whichever of ``<search>`` / ``<answer>`` closes first wins, as in Search-R1's ``postprocess_predictions``.
    Both Search-R1 and R1-Searcher query markers are recognised.
    """
    think_match = _THINK.search(segment)
    think = think_match.group(1).strip() if think_match else ""
    candidates: list[tuple[int, ParsedAction]] = []
    for pattern in (_SEARCH, _R1S_QUERY):
        m = pattern.search(segment)
        if m and m.group(1).strip():
            candidates.append((m.end(), ParsedAction("search", think, query=m.group(1).strip())))
    m = _ANSWER.search(segment)
    if m:
        candidates.append((m.end(), ParsedAction("answer", think, answer=m.group(1).strip())))
    if not candidates:
        return ParsedAction("invalid", think)
    return min(candidates, key=lambda c: c[0])[1]


def extract_final_answer(text: str) -> str | None:
    """The last ``<answer>`` (or R1-Searcher ``\\boxed{}``) in a whole transcript, or ``None``."""
    answers = _ANSWER.findall(text)
    if answers:
        return answers[-1].strip()
    boxed = _BOXED.findall(text)
    return boxed[-1].strip() if boxed else None


def render_information(hits: Sequence[Hit]) -> str:
    """Search-R1's ``_passages2string`` inside an ``<information>`` block."""
    body = "".join(f"Doc {i}(Title: {h.title}) {h.text}\n" for i, h in enumerate(hits, 1))
    return f"\n\n<information>{body.rstrip()}</information>\n\n"


def render_search(query: str, think: str = "") -> str:
    return (f"<think> {think} </think>\n" if think else "") + f"<search> {query} </search>"


def render_answer(answer: str, think: str = "") -> str:
    return (f"<think> {think} </think>\n" if think else "") + f"<answer> {answer} </answer>"


def render_guidance(text: str) -> str:
    """How a steering note enters an executor's context."""
    return f"\n<guidance> {text} </guidance>\n"


def render_rejection(feedback: str) -> str:
    """How a rejected answer (verification, or a steerer's reject) enters the context."""
    reason = f" {feedback}" if feedback.strip() else ""
    return f"\n<guidance> Your answer was rejected.{reason} Continue the search and answer again. </guidance>\n"


_INFO_BLOCK = re.compile(r"<information>(.*?)</information>", re.S)
_DOC = re.compile(r"Doc (\d+)\(Title: (.*?)\) ", re.S)


def searched_queries(transcript: str) -> list[str]:
    """All queries issued in a transcript, in order (both marker styles).

    The invalid-action reply quotes ``<search> and </search>``; it is removed first so it never counts as a query.
    """
    transcript = transcript.replace(INVALID_ACTION_REPLY, "")
    found = [(m.start(), m.group(1).strip()) for m in _SEARCH.finditer(transcript)]
    found += [(m.start(), m.group(1).strip()) for m in _R1S_QUERY.finditer(transcript)]
    return [q for _, q in sorted(found) if q]


def information_titles(transcript: str) -> list[list[str]]:
    """Titles of the documents in each ``<information>`` block, in order."""
    return [[m.group(2) for m in _DOC.finditer(block)] for block in _INFO_BLOCK.findall(transcript)]
