"""The ``handoff`` intent set read by meaning: accuracy on paraphrases written for the test (not the development
list its prototypes were chosen on), and a defined reading for any string."""

from __future__ import annotations

import pytest

from steer_envs.executors.pipeline import HANDOFF_INTENTS
from steer_envs.notes import shared_reader

from .handoff_paraphrases_dev import DEV_PARAPHRASES
from .handoff_paraphrases_heldout import TEST_PARAPHRASES

pytestmark = pytest.mark.llm  # reads with the packaged MiniLM


def test_test_paraphrases_read_as_their_intent():
    reader = shared_reader(HANDOFF_INTENTS)
    misses = [
        (intent, text, reader.read(text).intent)
        for intent, texts in TEST_PARAPHRASES.items()
        for text in texts
        if reader.read(text).intent != intent
    ]
    total = sum(len(v) for v in TEST_PARAPHRASES.values())
    assert 1 - len(misses) / total >= 0.90, misses
    for intent, texts in TEST_PARAPHRASES.items():  # no intent is carried by the others
        hits = sum(reader.read(t).intent == intent for t in texts)
        assert hits / len(texts) >= 0.75, (intent, hits)


def test_lists_are_disjoint_and_cover_every_intent():
    from steer_envs.notes import get_intent_set

    names = set(get_intent_set(HANDOFF_INTENTS).names)
    assert set(TEST_PARAPHRASES) == names == set(DEV_PARAPHRASES)
    dev = {t for v in DEV_PARAPHRASES.values() for t in v}
    assert not dev & {t for v in TEST_PARAPHRASES.values() for t in v}


@pytest.mark.parametrize("text", ["", "   ", "x" * 100_000, "\x00\x01<script>", "PASS FAIL PASS", "🙂" * 20])
def test_any_string_has_a_reading(text):
    reading = shared_reader(HANDOFF_INTENTS).read(text)
    assert reading.intent in set(shared_reader(HANDOFF_INTENTS).intent_set.names)


def test_search_payload_is_the_argument():
    reading = shared_reader(HANDOFF_INTENTS).read("Search for: the spouse of Marie Curie")
    assert reading.intent == "search_for" and reading.argument == "the spouse of Marie Curie"
