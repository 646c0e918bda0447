"""The answerability reader: labels, parsing, deterministic cached training, the wrapper and the steerer option.

Training runs on a small data folder (the fixture corpus of 6 passages, a dozen tasks) with the tiny hash encoder
and the lexical reader; one real-part test checks the packaged MiniLM encoder the reader uses by default on
MiniLM specs. Every test points ``$STEER_ENVS_CACHE`` at its own folder, so cache reuse is observable.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401
from steer_envs.errors import SteerEnvsError, UnknownNameError
from steer_envs.executors.protocol import render_information
from steer_envs.reader import (
    Document,
    ReaderConfig,
    collect_pairs,
    holds_answer,
    lexical_features,
    make_encoder,
    observation_documents,
    parse_documents,
    question_type,
    train_reader,
)
from steer_envs.reader import model as reader_model
from steer_envs.reader.features import LEXICAL_NAMES
from steer_envs.retrieval.base import Hit
from steer_envs.wrappers import AnswerabilityReader

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: (question, answers, split): questions over the six fixture passages, half answerable from what BM25 finds
TASKS = [
    ("who discovered x-rays in 1895", ["Wilhelm Röntgen"], "train"),
    ("what is the capital of france", ["Paris"], "train"),
    ("which river flows through vienna", ["Danube"], "train"),
    ("what is the capital of romania", ["Bucharest"], "train"),
    ("where does the danube flow into", ["Black Sea"], "train"),
    ("what kind of radiation is an x-ray", ["electromagnetic radiation"], "train"),
    ("what is the capital of austria", ["Vienna"], "train"),
    ("who was the first nobel prize winner in physics", ["Röntgen"], "train"),
    ("what is the population of paris", ["2.1 million"], "train"),
    ("who painted the ceiling of the sistine chapel", ["Michelangelo"], "train"),
    ("in which country is the danube delta", ["Romania"], "dev"),
    ("what is the capital of germany", ["Berlin"], "dev"),
    ("what nationality was wilhelm röntgen", ["German"], "dev"),
    ("what is the most populous city of france", ["Paris"], "dev"),
]


@pytest.fixture()
def reader_data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "data"
    (root / "corpus").mkdir(parents=True)
    (root / "tasks").mkdir()
    (root / "trajectories").mkdir()
    with (
        open(FIXTURES / "mini_corpus.jsonl", "rb") as fin,
        gzip.open(root / "corpus" / "passages.jsonl.gz", "wb") as fout,
    ):
        shutil.copyfileobj(fin, fout)
    with gzip.open(root / "tasks" / "nq.jsonl.gz", "wt", encoding="utf-8") as fh:
        for i, (question, answers, split) in enumerate(TASKS):
            fh.write(
                json.dumps(
                    {
                        "id": f"nq/r{i}",
                        "benchmark": "nq",
                        "split": split,
                        "question": question,
                        "golden_answers": answers,
                        "passage_ids": [],
                        "supporting_ids": [],
                        "answer_bearing_ids": [],
                        "answerable_in_corpus": True,
                    }
                )
                + "\n"
            )
    return root


def _config(data_dir, **kw) -> ReaderConfig:
    base = {
        "encoder": "hash:16",
        "classifiers": ("logreg-c0.1", "gbdt-7"),
        "train_tasks": None,
        "data_dir": str(data_dir),
        "benchmarks": ("nq",),
        "intervene_prob": 0.0,
    }  # no notes: the simulator's note reader stays unloaded
    return ReaderConfig(**{**base, **kw})


def test_label_matches_normalised_answers_on_whole_words():
    assert holds_answer("The Danube flows into the Black Sea.", ["black sea"])
    assert holds_answer("It was named after Wilhelm Röntgen, a physicist.", ["the Wilhelm Röntgen"])  # articles drop
    assert not holds_answer("He was mayor of the city.", ["May"])  # 'may' is not held by 'mayor'
    assert not holds_answer("Born in 19610 BC.", ["1961"])
    assert not holds_answer("the end", ["The"])  # an answer that normalises to nothing never matches


def test_documents_are_read_from_both_steering_observations():
    hits = [
        Hit("m1", "Wilhelm Röntgen", "Röntgen discovered X-rays (in 1895).", 1.0),
        Hit("m2", "X-ray", "A form.", 0.5),
    ]
    transcript = "<search> x rays </search>" + render_information(hits)
    docs = observation_documents({"goal": "who?", "transcript": transcript, "turn": 1})
    assert [(d.rank, d.title, d.text) for d in docs] == [
        (1, "Wilhelm Röntgen", "Röntgen discovered X-rays (in 1895)."),
        (2, "X-ray", "A form."),
    ]
    assert observation_documents({"goal": "who?", "transcript": "no search yet"}) == []
    facts = json.dumps({"facts": ["Paris is the capital of France.", 'He said "no".'], "sources": ["Paris"]})
    handoff = {
        "goal": "capital?",
        "sender": 1,
        "message": facts,
        "transcript": f"[0] planner -> searcher: {{}}\n[1] searcher -> reader: {facts}\n[2] reader -> verifier: {{}}",
    }
    assert [d.text for d in observation_documents(handoff)] == ["Paris is the capital of France.", 'He said "no".']
    cut = {**handoff, "transcript": f"[1] searcher -> reader: {facts[:45]}"}  # cut at the length limit: not JSON
    assert [d.text for d in observation_documents(cut)] == ["Paris is the capital of France."]
    assert parse_documents("just some text") == [Document(1, "", "just some text")]


def test_features_read_text_with_the_shared_helpers():
    from steer_envs import text
    from steer_envs.reader import features

    question = "Name a film Ridley Scott made first, Alien or Gladiator?"
    assert features.content_words(question) == {"name", "film", "ridley", "scott", "made", "alien", "gladiator"}
    assert features.content_words(question) == text.content_words(question, text.READER_STOP_WORDS)
    assert features.entities(question) == ["ridley scott", "alien", "gladiator"]  # the leading "Name" is an opener
    # one sentence splitter: "vs. the" does not end a sentence, so the best sentence keeps both clubs
    doc = Document(1, "Derby", "Arsenal vs. the Spurs ended 3-1 in 1971. Later seasons were quieter.")
    row = lexical_features("When did Arsenal play the Spurs?", doc)
    assert row[LEXICAL_NAMES.index("best_sentence_overlap")] == pytest.approx(2 / 3)  # arsenal, spurs of 3
    assert row[LEXICAL_NAMES.index("best_year")] == 1.0


def test_answer_type_cues_see_a_year_for_a_when_question():
    assert question_type("When was the Eiffel Tower built?") == "when"
    assert question_type("How many moons does Mars have?") == "how_many"
    assert question_type("Who is older, Alice or Bob?") == "comparison"
    names = list(LEXICAL_NAMES)
    with_year = lexical_features("When was the tower built?", Document(1, "Tower", "The tower was built in 1889."))
    without = lexical_features("When was the tower built?", Document(1, "Tower", "The tower is tall."))
    assert with_year[names.index("when_x_best_year")] == 1.0 and without[names.index("when_x_best_year")] == 0.0


def test_training_is_deterministic_and_the_cache_is_reused(reader_data, monkeypatch):
    config = _config(reader_data)
    pairs = collect_pairs("train", seed=3, intervene_prob=0.0, data_dir=str(reader_data), benchmarks=["nq"])
    assert pairs == collect_pairs("train", seed=3, intervene_prob=0.0, data_dir=str(reader_data), benchmarks=["nq"])
    assert {p.label for p in pairs} == {0, 1}
    first = train_reader(config, use_cache=False)
    again = train_reader(config, use_cache=False)
    docs = [
        Document(1, "Paris", "Paris is the capital and most populous city of France."),
        Document(2, "Vienna", "Vienna is the capital of Austria and lies on the river Danube."),
    ]
    scores = first.score("what is the capital of france", docs)
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))
    np.testing.assert_array_equal(scores, again.score("what is the capital of france", docs))
    assert set(first.dev_auc) == {"logreg-c0.1", "gbdt-7"} and first.classifier_name in first.dev_auc
    # the second call loads the cached reader: no pairs are collected, nothing is trained
    monkeypatch.setattr(reader_model, "collect_pairs", lambda *a, **k: pytest.fail("pairs recollected"))
    monkeypatch.setattr(reader_model, "CLASSIFIERS", {})
    cached = train_reader(config)
    np.testing.assert_array_equal(scores, cached.score("what is the capital of france", docs))
    assert list((Path(reader_data).parent / "cache" / "reader" / "embeddings").glob("hash16.npz"))
    # another config is another cache entry (it would need training, which the patched registry refuses)
    with pytest.raises(KeyError):
        train_reader(_config(reader_data, classifiers=("gbdt-7",)))


def test_wrapper_adds_the_scores_to_info_and_observation(reader_data):
    reader = train_reader(_config(reader_data, encoder="lexical", classifiers=("logreg-c0.1",)))
    env = AnswerabilityReader(
        gym.make("steer_envs/SearchSteering-v0", split="train", data_dir=str(reader_data), benchmarks=["nq"]),
        reader,
        observation_key="reader_scores",
        max_documents=4,
    )
    assert env.observation_space["reader_scores"].shape == (4,)
    obs, info = env.reset(seed=0)
    seen = [info["reader"]]
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(0)
        done = term or trunc
        seen.append(info["reader"])
        n = info["reader"]["documents"]
        assert n == len(observation_documents(obs)) and obs["reader_scores"].shape == (4,)
        np.testing.assert_allclose(obs["reader_scores"][:n], info["reader"]["scores"][:4], rtol=1e-6)
        assert env.observation_space.contains(obs)
    assert any(r["documents"] > 0 and 0 < r["max"] <= 1 for r in seen)  # the executor searched and it was read
    with pytest.raises(SteerEnvsError, match="already has a key"):
        AnswerabilityReader(
            gym.make("steer_envs/SearchSteering-v0", split="train", data_dir=str(reader_data), benchmarks=["nq"]),
            reader,
            observation_key="goal",
        )


def test_steerer_reader_option_widens_the_features(reader_data):
    from agents.steering.encoder import READER_FEATURE_NAMES, EncoderSteerer
    from agents.steering.interventions import options_from_catalogue
    from steer_envs.envs.catalogue import STEERING

    options = options_from_catalogue(STEERING)
    plain = EncoderSteerer(options, hash_dim=1 << 10, fast_input="stats")
    reading = EncoderSteerer(options, hash_dim=1 << 10, fast_input="stats", reader="lexical")
    assert reading.encode.in_features == plain.encode.in_features + len(READER_FEATURE_NAMES)
    assert "reader" not in plain.build_spec() and reading.build_spec()["reader"] == "lexical"
    reading._reader_model = train_reader(_config(reader_data, encoder="lexical", classifiers=("logreg-c0.1",)))
    hits = [Hit("m3", "Paris", "Paris is the capital and most populous city of France.", 1.0)]
    obs = {
        "goal": "what is the capital of france",
        "transcript": "<search> capital france </search>" + render_information(hits),
        "turn": np.int64(1),
        "interventions": np.int64(0),
    }
    feats = reading.reader_features(obs)
    assert feats[-1] == 1.0 and feats[0] == feats[1] == feats[2] > 0  # one document: max = top-1 = mean
    assert reading.reader_features({**obs, "transcript": ""}).tolist() == [0.0] * len(READER_FEATURE_NAMES)
    assert reading.hidden_states([obs]).shape == (1, reading.hidden)
    assert reading.fast_scores([obs]).shape == (1,)


def test_bad_encoder_specs_say_what_is_valid():
    with pytest.raises(UnknownNameError, match="lexical.*minilm|minilm.*lexical"):
        ReaderConfig(encoder="bert")
    with pytest.raises(SteerEnvsError, match="integer argument"):
        make_encoder("hash:big")
    with pytest.raises(UnknownNameError, match="reader classifier"):
        ReaderConfig(encoder="lexical", classifiers=("svm",))
    from agents.steering.encoder import EncoderSteerer
    from agents.steering.interventions import options_from_catalogue
    from steer_envs.envs.catalogue import STEERING

    with pytest.raises(UnknownNameError, match="reader encoder"):
        EncoderSteerer(options_from_catalogue(STEERING), hash_dim=1 << 10, reader="bert")


def test_minilm_encoder_is_the_packaged_model_truncated():
    """Real part: the reader's MiniLM gives the note reader's vectors for short texts, and truncates long ones."""
    from steer_envs.notes.encoder import shared_encoder

    encoder = make_encoder("minilm:16")
    short = "Paris is the capital of France."
    np.testing.assert_allclose(encoder.encode([short])[0], shared_encoder().encode(short), atol=1e-5)
    long_a = "Paris is the capital of France and its most populous city " * 3 + "with museums."
    long_b = "Paris is the capital of France and its most populous city " * 3 + "with rivers and bridges."
    np.testing.assert_allclose(encoder.encode([long_a])[0], encoder.encode([long_b])[0], atol=1e-6)
    assert not np.allclose(shared_encoder().encode(long_a), shared_encoder().encode(long_b), atol=1e-3)
