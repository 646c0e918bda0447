"""The simulator's note reader on hostile notes: any string gets a defined intent, the same every time, quickly.

Written against the public function that maps a note to an intent; retarget ``read_note`` when the reader is
replaced (the properties stay the same)."""
from __future__ import annotations

import time

from hypothesis import given, settings

from steer_envs.executors.sim.intents import INTENT_KINDS, Intent, parse_intent
from tests.hostile import hostile_text, megabyte_text

read_note = parse_intent
KINDS = (*INTENT_KINDS, "none", "reject")


def _check(note: str) -> Intent:
    intent = read_note(note)
    assert isinstance(intent, Intent) and intent.kind in KINDS
    assert isinstance(intent.argument, str) and len(intent.argument) <= len(note)
    return intent


@settings(max_examples=400, deadline=500)
@given(hostile_text)
def test_any_note_gets_a_defined_intent_and_the_same_one_twice(note):
    assert _check(note) == read_note(note)


@settings(max_examples=6, deadline=None)
@given(megabyte_text)
def test_a_megabyte_note_is_read_quickly(note):
    start = time.perf_counter()
    _check(note)
    assert time.perf_counter() - start < 5
