"""Split a recorded search-agent transcript into the turns its generation loop actually took.

A recorded ``response`` interleaves two authors: the model (generated text, which stops at a stop sequence) and
the environment (search results or the invalid-action reply, inserted right after that stop). Splitting on tags
alone goes wrong on real rollouts, because base models also *write* tags: they hallucinate ``<information>``
blocks, close ``</search>`` without opening it, and Search-R1's invalid-action reply itself contains the text
``<search> and </search>``. So this parser replays the loop instead: it scans to the next stop sequence of the
recording's format, then consumes the environment's insertion if one follows. Whatever follows a stop is, by
construction, not model text. The concatenation of every turn's ``segment + observation`` is the response, byte
for byte (:func:`RecordedRollout` round trip), which the tests check on every recorded row.

Formats:

* ``search-r1`` (Search-R1): stops ``</search>`` / ``</answer>``; a valid search gets
  ``"\\n\\n<information>Doc i(Title: t) text ...</information>\\n\\n"``, an invalid action gets
  :data:`~steer_envs.executors.protocol.INVALID_ACTION_REPLY`.
* ``r1-searcher`` (R1-Searcher): stop ``<|end_of_query|>``; results come back as
  ``"\\n\\n<|begin_of_documents|>\\n(1)Title   text ...<|end_of_documents|>\\n\\n"``; the model ends with EOS and
  puts its answer in ``<answer>``, ``\\boxed{}``, or plain final text.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..data.trajectories import RecordedRollout
from ..errors import SteerEnvsError
from .protocol import INVALID_ACTION_REPLY

RecordedKind = Literal["search", "answer", "invalid", "unfinished"]
FORMATS: tuple[str, ...] = ("search-r1", "r1-searcher")


@dataclass(frozen=True)
class RecordedDocument:
    """One retrieved document as the agent saw it (rank is 1-based, as printed)."""

    rank: int
    title: str
    text: str


@dataclass(frozen=True)
class RecordedTurn:
    """One turn of a real rollout.

    ``segment`` is model-generated text (including its stop sequence); ``observation`` is what the environment
    inserted after it (verbatim, empty for the last turn). ``kind``: ``search`` (got results), ``answer``
    (final answer given), ``invalid`` (stop without a valid action, got the invalid-action reply),
    ``unfinished`` (the recording ends without an answer: truncated or the model stopped).
    """

    index: int
    kind: RecordedKind
    segment: str
    observation: str = ""
    query: str | None = None
    answer: str | None = None
    think: str = ""
    documents: tuple[RecordedDocument, ...] = ()

    @property
    def text(self) -> str:
        return self.segment + self.observation


# -- format descriptions -------------------------------------------------------------------------------------
_SR1_STOP = re.compile(r"</search>|</answer>")
_SR1_INFO = re.compile(r"\n\n<information>(.*?)</information>\n\n", re.S)
_SR1_SEARCH = re.compile(r"<search>(.*?)</search>", re.S)
_SR1_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_SR1_DOC = re.compile(r"Doc (\d+)\(Title: (.*?)\) (.*?)(?=\nDoc \d+\(Title: |\Z)", re.S)

_R1S_STOP = re.compile(re.escape("<|end_of_query|>"))
_R1S_BEGIN_QUERY = "<|begin_of_query|>"
_R1S_DOCS = re.compile(r"\n\n<\|begin_of_documents\|>\n?(.*?)<\|end_of_documents\|>\n\n", re.S)
_R1S_DOC = re.compile(r"\((\d+)\)(.*?)(?=\n\(\d+\)|\Z)", re.S)

_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_MARKUP = re.compile(r"<[^<>]{1,40}>")


def _think(segment: str) -> str:
    m = _THINK.search(segment)
    return m.group(1).strip() if m else ""


def _sr1_documents(block: str) -> tuple[RecordedDocument, ...]:
    return tuple(
        RecordedDocument(int(m.group(1)), m.group(2).strip().strip('"'), m.group(3).strip())
        for m in _SR1_DOC.finditer(block)
    )


def _r1s_documents(block: str) -> tuple[RecordedDocument, ...]:
    docs = []
    for m in _R1S_DOC.finditer(block):
        body = m.group(2).strip()
        title, sep, text = body.partition("   ")  # R1-Searcher prints "(n)Title   text"
        docs.append(RecordedDocument(int(m.group(1)), title.strip() if sep else "", (text if sep else body).strip()))
    return tuple(docs)


def _final_text_answer(segment: str) -> str | None:
    """R1-Searcher's last resort: the last non-empty line of the final text, markup removed."""
    for line in reversed(segment.strip().splitlines()):
        cleaned = _MARKUP.sub(" ", line).strip()
        if cleaned:
            return cleaned
    return None


def _final_answer(segment: str, fmt: str) -> str | None:
    m = list(_SR1_ANSWER.finditer(segment))
    if m:
        return m[-1].group(1).strip()
    boxed = _BOXED.findall(segment)
    if boxed:
        return boxed[-1].strip()
    return _final_text_answer(segment) if fmt == "r1-searcher" else None


# -- the parsers ----------------------------------------------------------------------------------------------
def _parse_search_r1(response: str) -> list[RecordedTurn]:
    turns: list[RecordedTurn] = []
    pos = 0
    while pos < len(response):
        stop = _SR1_STOP.search(response, pos)
        if stop is None:  # generation ended without a stop sequence: EOS or truncation
            segment = response[pos:]
            boxed = _BOXED.findall(segment)
            if boxed:
                turns.append(RecordedTurn(len(turns), "answer", segment, answer=boxed[-1].strip(), think=_think(segment)))
            else:
                turns.append(RecordedTurn(len(turns), "unfinished", segment, think=_think(segment)))
            break
        segment = response[pos:stop.end()]
        after = stop.end()
        think = _think(segment)
        if stop.group(0) == "</answer>":
            answers = _SR1_ANSWER.findall(segment)
            if answers and not response.startswith(INVALID_ACTION_REPLY, after):
                # the episode ends here; trailing text (never seen in the recordings) stays in the segment
                turns.append(RecordedTurn(len(turns), "answer", response[pos:], answer=answers[-1].strip(), think=think))
                break
        info = _SR1_INFO.match(response, after)
        if info is not None:
            queries = _SR1_SEARCH.findall(segment)
            query = queries[-1].strip() if queries else ""
            turns.append(RecordedTurn(len(turns), "search", segment, info.group(0), query=query, think=think,
                                      documents=_sr1_documents(info.group(1))))
            pos = info.end()
        elif response.startswith(INVALID_ACTION_REPLY, after):
            turns.append(RecordedTurn(len(turns), "invalid", segment, INVALID_ACTION_REPLY, think=think))
            pos = after + len(INVALID_ACTION_REPLY)
        else:  # a stop with nothing the environment inserted: the recording was cut here
            queries = _SR1_SEARCH.findall(segment)
            if after == len(response):
                kind: RecordedKind = "search" if queries else "unfinished"
                turns.append(RecordedTurn(len(turns), kind, segment, query=queries[-1].strip() if queries else None,
                                          think=think))
            else:  # the loop went on without inserting anything: count it as an action without effect
                turns.append(RecordedTurn(len(turns), "invalid", segment, think=think))
            pos = after
    return turns


def _parse_r1_searcher(response: str) -> list[RecordedTurn]:
    turns: list[RecordedTurn] = []
    pos = 0
    while pos < len(response):
        stop = _R1S_STOP.search(response, pos)
        docs = _R1S_DOCS.match(response, stop.end()) if stop is not None else None
        if stop is None or docs is None:
            # no more searches: the rest up to EOS is the final segment (R1-Searcher has no invalid reply)
            segment = response[pos:]
            answer = _final_answer(segment, "r1-searcher")
            kind: RecordedKind = "answer" if answer is not None else "unfinished"
            turns.append(RecordedTurn(len(turns), kind, segment, answer=answer, think=_think(segment)))
            break
        segment = response[pos:stop.end()]
        start = segment.rfind(_R1S_BEGIN_QUERY)
        query = segment[start + len(_R1S_BEGIN_QUERY): -len(stop.group(0))].strip() if start >= 0 else ""
        turns.append(RecordedTurn(len(turns), "search", segment, docs.group(0), query=query, think=_think(segment),
                                  documents=_r1s_documents(docs.group(1))))
        pos = docs.end()
    return turns


_PARSERS = {"search-r1": _parse_search_r1, "r1-searcher": _parse_r1_searcher}


def parse_transcript(response: str, fmt: str = "search-r1") -> list[RecordedTurn]:
    """Turns of one recorded ``response`` in format ``fmt`` (``search-r1`` or ``r1-searcher``)."""
    if fmt not in _PARSERS:
        raise SteerEnvsError(f"unknown transcript format {fmt!r}; valid formats: {', '.join(FORMATS)}")
    if not isinstance(response, str):
        raise SteerEnvsError(f"a transcript must be a string, got {type(response).__name__}")
    return _PARSERS[fmt](response)


def parse_rollout(rollout: RecordedRollout) -> list[RecordedTurn]:
    """Turns of a :class:`RecordedRollout` (its ``format`` field picks the parser)."""
    return parse_transcript(rollout.response, rollout.format)


def recorded_queries(turns: Sequence[RecordedTurn]) -> list[str]:
    """The queries that got results, in order."""
    return [t.query or "" for t in turns if t.kind == "search"]


def final_answer(turns: Sequence[RecordedTurn]) -> str | None:
    """The recorded final answer, or ``None`` when the rollout ended without one."""
    for turn in reversed(turns):
        if turn.kind == "answer":
            return turn.answer
    return None
