"""The protocol parser and the transcript parser on hostile text: never a crash, never a hang (linear time on a
megabyte of unclosed tags), always a defined result, and the linear scanner finds what the regex it replaced
finds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from steer_envs.executors.protocol import (
    ANSWER_TAGS,
    INFORMATION_TAGS,
    R1S_QUERY_TAGS,
    SEARCH_TAGS,
    extract_final_answer,
    information_titles,
    parse_action,
    searched_queries,
    tag_spans,
)
from steer_envs.executors.transcript import parse_transcript
from tests.hostile import hostile_text, megabyte_text, tag_soup
from tests.timing import cpu_seconds_under

KINDS = ("search", "answer", "invalid")


def _check_defined(text: str) -> None:
    action = parse_action(text)
    assert action.kind in KINDS
    if action.kind == "search":
        assert action.query and action.query == action.query.strip()
    if action.kind == "answer":
        assert isinstance(action.answer, str)
    answer = extract_final_answer(text)
    assert answer is None or isinstance(answer, str)
    assert all(isinstance(q, str) and q for q in searched_queries(text))
    assert all(isinstance(t, str) for block in information_titles(text) for t in block)
    for fmt in ("search-r1", "r1-searcher"):
        turns = parse_transcript(text, fmt)
        assert all(t.kind in ("search", "answer", "invalid", "unfinished") for t in turns)


@settings(max_examples=300)
@given(hostile_text)
def test_parsers_give_a_defined_result_on_any_text(text):
    _check_defined(text)


@settings(max_examples=8, deadline=None)
@given(megabyte_text)
def test_a_megabyte_of_hostile_text_is_parsed_in_linear_time(text):
    with cpu_seconds_under(10, typical_s=0.1):  # the regexes this replaced took tens of minutes on such input
        _check_defined(text)


@settings(max_examples=400, deadline=None)
@given(tag_soup, st.sampled_from([SEARCH_TAGS, ANSWER_TAGS, INFORMATION_TAGS, R1S_QUERY_TAGS]))
def test_the_linear_scanner_finds_what_the_regex_found(text, tags):
    pattern = re.compile(re.escape(tags[0]) + "(.*?)" + re.escape(tags[1]), re.S)
    assert [(s.start, s.end, s.inner) for s in tag_spans(text, tags)] == [
        (m.start(), m.end(), m.group(1)) for m in pattern.finditer(text)
    ]
