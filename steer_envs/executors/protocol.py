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

SEARCH_TAGS = ("<search>", "</search>")
ANSWER_TAGS = ("<answer>", "</answer>")
INFORMATION_TAGS = ("<information>", "</information>")
R1S_QUERY_TAGS = ("<|begin_of_query|>", "<|end_of_query|>")
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")


@dataclass(frozen=True)
class Span:
    """One ``open … close`` element: where it starts, where its closing tag ends, and the text inside."""

    start: int
    end: int
    inner: str


def tag_spans(text: str, tags: tuple[str, str], first_only: bool = False) -> list[Span]:
    """The non-overlapping ``open … close`` elements of ``text``, leftmost first: what ``re.finditer`` of
    ``open(.*?)close`` finds, in linear time. (That regex is quadratic on hostile text: a megabyte of unclosed
    ``<search>`` tags kept it busy for tens of minutes; an element with no closing tag after it ends the scan,
    since no later one can close either.)"""
    open_tag, close_tag = tags
    spans: list[Span] = []
    pos = 0
    while True:
        start = text.find(open_tag, pos)
        if start < 0:
            return spans
        inner_start = start + len(open_tag)
        close = text.find(close_tag, inner_start)
        if close < 0:
            return spans
        spans.append(Span(start, close + len(close_tag), text[inner_start:close]))
        if first_only:
            return spans
        pos = close + len(close_tag)


def _first(text: str, tags: tuple[str, str]) -> Span | None:
    found = tag_spans(text, tags, first_only=True)
    return found[0] if found else None


def first_think(segment: str) -> str:
    """The first ``<think>`` block, stripped (to the end of the segment when it is not closed)."""
    start = segment.find("<think>")
    if start < 0:
        return ""
    inner_start = start + len("<think>")
    close = segment.find("</think>", inner_start)
    return segment[inner_start : close if close >= 0 else len(segment)].strip()


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
    think = first_think(segment)
    candidates: list[tuple[int, ParsedAction]] = []
    for tags in (SEARCH_TAGS, R1S_QUERY_TAGS):
        m = _first(segment, tags)
        if m and m.inner.strip():
            candidates.append((m.end, ParsedAction("search", think, query=m.inner.strip())))
    m = _first(segment, ANSWER_TAGS)
    if m:
        candidates.append((m.end, ParsedAction("answer", think, answer=m.inner.strip())))
    if not candidates:
        return ParsedAction("invalid", think)
    return min(candidates, key=lambda c: c[0])[1]


def extract_final_answer(text: str) -> str | None:
    """The last ``<answer>`` (or R1-Searcher ``\\boxed{}``) in a whole transcript, or ``None``."""
    answers = tag_spans(text, ANSWER_TAGS)
    if answers:
        return answers[-1].inner.strip()
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


_DOC = re.compile(r"Doc (\d+)\(Title: (.*?)\) ", re.S)


def searched_queries(transcript: str) -> list[str]:
    """All queries issued in a transcript, in order (both marker styles).

    The invalid-action reply quotes ``<search> and </search>``; it is removed first so it never counts as a query.
    """
    transcript = transcript.replace(INVALID_ACTION_REPLY, "")
    found = [(m.start, m.inner.strip()) for m in tag_spans(transcript, SEARCH_TAGS)]
    found += [(m.start, m.inner.strip()) for m in tag_spans(transcript, R1S_QUERY_TAGS)]
    return [q for _, q in sorted(found) if q]


def information_titles(transcript: str) -> list[list[str]]:
    """Titles of the documents in each ``<information>`` block, in order."""
    return [[m.group(2) for m in _DOC.finditer(block.inner)] for block in tag_spans(transcript, INFORMATION_TAGS)]
