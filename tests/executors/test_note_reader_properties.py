"""The note reader on hostile notes: any string gets a defined reading, the same every time, quickly.

Written against the public function that maps a note to an intent (``steer_envs.notes.read_note``); retarget
``read_note`` if the reader is replaced (the properties stay the same)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from steer_envs.notes import Reading, get_intent_set, read_note
from steer_envs.notes.reader import MIN_SIMILARITY, NoteReader, shared_reader
from tests.hostile import hostile_text, megabyte_text
from tests.timing import cpu_seconds_under

INTENTS = set(get_intent_set("searcher").names) | {"none"}
_SECOND_READER = NoteReader("searcher")


@pytest.fixture(scope="module", autouse=True)
def _loaded_reader():
    """Load the encoder and fit the probe before the timed properties (the first reading pays for both)."""
    read_note("warm up")
    _SECOND_READER.read("warm up")


def _check(note: str) -> Reading:
    reading = read_note(note)
    assert isinstance(reading, Reading) and reading.intent in INTENTS
    if note.strip():
        # the confidence is the probe's probability of the most likely intent, the similarity the best cosine
        # to a prototype; a note far from every prototype is not actionable
        probs, similarity = shared_reader().probabilities(note)
        assert reading.confidence == pytest.approx(max(probs.values())), (reading, probs)
        assert reading.similarity == pytest.approx(similarity)
        assert similarity >= MIN_SIMILARITY or reading.intent == "none"
    else:
        assert (reading.intent, reading.confidence, reading.argument) == ("none", 1.0, "")
    assert isinstance(reading.argument, str) and len(reading.argument) <= len(note)
    return reading


@settings(max_examples=60)
@given(hostile_text)
def test_any_note_gets_a_defined_reading_and_the_same_one_twice(note):
    # a second reader computes the reading again (the shared reader would answer from its cache)
    assert _check(note) == _SECOND_READER.read(note)


@settings(max_examples=3, deadline=None)
@given(megabyte_text)
def test_a_megabyte_note_is_read_quickly(note):
    with cpu_seconds_under(20, typical_s=0.1):
        _check(note)
