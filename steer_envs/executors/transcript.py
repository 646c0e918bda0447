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
from .protocol import ANSWER_TAGS, INVALID_ACTION_REPLY, SEARCH_TAGS, first_think, tag_spans

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
_SR1_INFO = ("\n\n<information>", "</information>\n\n")
_SR1_DOC_HEAD = re.compile(r"Doc (\d+)\(Title: ")
_SR1_DOC_NEXT = re.compile(r"\nDoc \d+\(Title: ")

_R1S_STOP = re.compile(re.escape("<|end_of_query|>"))
_R1S_BEGIN_QUERY = "<|begin_of_query|>"
_R1S_DOCS = ("\n\n<|begin_of_documents|>", "<|end_of_documents|>\n\n")
_R1S_DOC = re.compile(r"\((\d+)\)(.*?)(?=\n\(\d+\)|\Z)", re.S)

_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_MARKUP = re.compile(r"<[^<>]{1,40}>")


def _think(segment: str) -> str:
    return first_think(segment)


def _inner_texts(segment: str, tags: tuple[str, str]) -> list[str]:
    """What ``open(.*?)close`` finds, in linear time (see :func:`~steer_envs.executors.protocol.tag_spans`)."""
    return [span.inner for span in tag_spans(segment, tags)]


class _Closing:
    """The first position of ``needle`` at or after a position that only grows: each search starts where the
    last one ended, so a parse stays linear however many openings lack their closing tag."""

    def __init__(self, text: str, needle: str) -> None:
        self.text, self.needle, self.found = text, needle, -2

    def at_or_after(self, pos: int) -> int:
        if self.found == -1 or (self.found >= pos):
            return self.found
        self.found = self.text.find(self.needle, pos)
        return self.found


@dataclass(frozen=True)
class _Block:
    """An inserted block found at a position: ``group(0)`` the whole block, ``group(1)`` its body."""

    text: str
    start: int
    body_start: int
    body_end: int
    stop: int

    def group(self, i: int) -> str:
        return self.text[self.start : self.stop] if i == 0 else self.text[self.body_start : self.body_end]

    def end(self) -> int:
        return self.stop


def _block_at(text: str, pos: int, tags: tuple[str, str], closing: _Closing, optional_newline: bool = False):
    """The block ``open body close`` starting exactly at ``pos`` (what ``re.match`` of ``open(.*?)close`` gives)."""
    if not text.startswith(tags[0], pos):
        return None
    body_start = pos + len(tags[0])
    if optional_newline and text.startswith("\n", body_start):
        body_start += 1
    body_end = closing.at_or_after(body_start)
    if body_end < 0:
        return None
    return _Block(text, pos, body_start, body_end, body_end + len(tags[1]))


def _sr1_documents(block: str) -> tuple[RecordedDocument, ...]:
    """``Doc i(Title: t) text`` entries, each text running to the next ``\nDoc j(Title: `` (linear time)."""
    docs = []
    pos = 0
    while True:
        head = _SR1_DOC_HEAD.search(block, pos)
        if head is None:
            break
        title_end = block.find(") ", head.end())
        if title_end < 0:
            break
        following = _SR1_DOC_NEXT.search(block, title_end + 2)
        pos = following.start() if following else len(block)
        docs.append(
            RecordedDocument(
                int(head.group(1)), block[head.end() : title_end].strip().strip('"'), block[title_end + 2 : pos].strip()
            )
        )
    return tuple(docs)


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
    answers = _inner_texts(segment, ANSWER_TAGS)
    if answers:
        return answers[-1].strip()
    boxed = _BOXED.findall(segment)
    if boxed:
        return boxed[-1].strip()
    return _final_text_answer(segment) if fmt == "r1-searcher" else None


# -- the parsers ----------------------------------------------------------------------------------------------
def _parse_search_r1(response: str) -> list[RecordedTurn]:
    turns: list[RecordedTurn] = []
    pos = 0
    info_end = _Closing(response, _SR1_INFO[1])
    while pos < len(response):
        stop = _SR1_STOP.search(response, pos)
        if stop is None:  # generation ended without a stop sequence: EOS or truncation
            segment = response[pos:]
            boxed = _BOXED.findall(segment)
            if boxed:
                turns.append(
                    RecordedTurn(len(turns), "answer", segment, answer=boxed[-1].strip(), think=_think(segment))
                )
            else:
                turns.append(RecordedTurn(len(turns), "unfinished", segment, think=_think(segment)))
            break
        segment = response[pos : stop.end()]
        after = stop.end()
        think = _think(segment)
        if stop.group(0) == "</answer>":
            answers = _inner_texts(segment, ANSWER_TAGS)
            if answers and not response.startswith(INVALID_ACTION_REPLY, after):
                # the episode ends here; trailing text (never seen in the recordings) stays in the segment
                turns.append(
                    RecordedTurn(len(turns), "answer", response[pos:], answer=answers[-1].strip(), think=think)
                )
                break
        info = _block_at(response, after, _SR1_INFO, info_end)
        if info is not None:
            queries = _inner_texts(segment, SEARCH_TAGS)
            query = queries[-1].strip() if queries else ""
            turns.append(
                RecordedTurn(
                    len(turns),
                    "search",
                    segment,
                    info.group(0),
                    query=query,
                    think=think,
                    documents=_sr1_documents(info.group(1)),
                )
            )
            pos = info.end()
        elif response.startswith(INVALID_ACTION_REPLY, after):
            turns.append(RecordedTurn(len(turns), "invalid", segment, INVALID_ACTION_REPLY, think=think))
            pos = after + len(INVALID_ACTION_REPLY)
        else:  # a stop with nothing the environment inserted: the recording was cut here
            queries = _inner_texts(segment, SEARCH_TAGS)
            if after == len(response):
                kind: RecordedKind = "search" if queries else "unfinished"
                turns.append(
                    RecordedTurn(len(turns), kind, segment, query=queries[-1].strip() if queries else None, think=think)
                )
            else:  # the loop went on without inserting anything: count it as an action without effect
                turns.append(RecordedTurn(len(turns), "invalid", segment, think=think))
            pos = after
    return turns


def _parse_r1_searcher(response: str) -> list[RecordedTurn]:
    turns: list[RecordedTurn] = []
    pos = 0
    docs_end = _Closing(response, _R1S_DOCS[1])
    while pos < len(response):
        stop = _R1S_STOP.search(response, pos)
        docs = _block_at(response, stop.end(), _R1S_DOCS, docs_end, optional_newline=True) if stop is not None else None
        if stop is None or docs is None:
            # no more searches: the rest up to EOS is the final segment (R1-Searcher has no invalid reply)
            segment = response[pos:]
            answer = _final_answer(segment, "r1-searcher")
            kind: RecordedKind = "answer" if answer is not None else "unfinished"
            turns.append(RecordedTurn(len(turns), kind, segment, answer=answer, think=_think(segment)))
            break
        segment = response[pos : stop.end()]
        start = segment.rfind(_R1S_BEGIN_QUERY)
        query = segment[start + len(_R1S_BEGIN_QUERY) : -len(stop.group(0))].strip() if start >= 0 else ""
        turns.append(
            RecordedTurn(
                len(turns),
                "search",
                segment,
                docs.group(0),
                query=query,
                think=_think(segment),
                documents=_r1s_documents(docs.group(1)),
            )
        )
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
