"""What reading a note costs (pytest-benchmark): the simulated executor reads every note it gets by meaning, with
the MiniLM sentence encoder and a logistic-regression probe over intent prototypes (``steer_envs.notes``).

Run: ``pytest perf/test_perf_notes.py --benchmark-enable -q``.

* warm reader, notes it has never seen (one MiniLM forward each, plus a second for a note with a payload): the
  cost of a new note once the model is loaded; the testbed's target is < 5 ms;
* warm reader, a note read before (the in-memory cache): what repeated catalogue notes cost;
* the first read in a fresh process (the model load and the probe fit), for scale.
"""

from __future__ import annotations

import itertools
import time

import pytest

from steer_envs.notes.reader import NoteReader, shared_reader

GOAL = "Who directed the film that won the Palme d'Or in 1994?"
#: a warm read of a note never seen before must take less than this (ms)
WARM_READ_TARGET_MS = 5.0
NOTES = [
    "Please double-check that answer before you commit to it.",
    "You are drifting; go back to what the question asks.",
    "Search: director of Pulp Fiction",
    "Stop repeating the same query, try different words.",
    "I think you have enough evidence to answer now.",
    "Keep looking, one search is not enough for this.",
]


@pytest.fixture(scope="module")
def reader() -> NoteReader:
    r = shared_reader("searcher")
    r.read_in_context(NOTES[0], GOAL)  # load the encoder and fit the probe
    return r


def test_read_an_unseen_note_warm(benchmark, reader):
    counter = itertools.count()

    def read_new():
        n = next(counter)
        return reader.read_in_context(f"{NOTES[n % len(NOTES)]} (note {n})", GOAL)

    result = benchmark.pedantic(read_new, rounds=60, iterations=1, warmup_rounds=3)
    benchmark.extra_info["target_ms"] = WARM_READ_TARGET_MS
    assert result.intent  # every string gets a defined reading


def test_read_a_cached_note(benchmark, reader):
    reader.read_in_context(NOTES[1], GOAL)
    result = benchmark(reader.read_in_context, NOTES[1], GOAL)
    assert result.intent


def test_first_read_in_a_fresh_reader(benchmark):
    from steer_envs.notes.encoder import MiniLMEncoder

    def cold():
        start = time.perf_counter()
        r = NoteReader("searcher", MiniLMEncoder())
        r.read_in_context(NOTES[2], GOAL)
        return time.perf_counter() - start

    seconds = benchmark.pedantic(cold, rounds=1, iterations=1)
    assert seconds > 0
