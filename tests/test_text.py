"""steer_envs.text: each helper on real question / passage text, and the old homes re-exporting it."""
from __future__ import annotations

import pytest

from steer_envs import text
from steer_envs.text import (
    CANDIDATE_STOP_WORDS, FEATURE_STOP_WORDS, NO_WORDS, OBSERVER_STOP_WORDS, PIPELINE_OPENERS, RELATION_STOP_WORDS,
    SITUATION_STOP_WORDS, STOP_WORDS, content_words, entities, normalize_query, query_key, sentences, similarity,
    split_sentences, tokens, words,
)

# real questions of the shipped data (HotpotQA, TriviaQA, 2Wiki) and a real passage
COMPARISON = "Were Scott Derrickson and Ed Wood of the same nationality?"
WHOSE = "Whose play about the Salem witch trials in the 17th century drew parallels to McCarthyism in the 1950s?"
ROC = ("The Republic of China (ROC) did not compete at the Montreal Olympics in 1976 because the People's Republic "
       "of China (PRC) pressured the organisers to stop them competing under that name. What name did the ROC use "
       "when it next competed in 1984?")
PASSAGE = ("Wilhelm Conrad Röntgen was a German mechanical engineer and physicist. In 1895 he produced and detected "
           "electromagnetic radiation in a wavelength range known as X-rays!  He received the first Nobel Prize in "
           "Physics in 1901.")


def test_words_lowercase_ascii_runs():
    assert words("Who directed 'In Bruges' (2008)?") == ["who", "directed", "in", "bruges", "2008"]
    assert words("Röntgen's") == ["r", "ntgen", "s"]  # ASCII runs only: what the feature hashes were built on


def test_tokens_keep_names_whole():
    assert tokens("the People's Republic of Röntgen’s time") == ["the", "People's", "Republic", "of", "Röntgen’s", "time"]


def test_content_words_use_the_named_list():
    assert content_words(COMPARISON) == {"scott", "derrickson", "ed", "wood", "same", "nationality"}
    assert content_words(COMPARISON, CANDIDATE_STOP_WORDS) == {"scott", "derrickson", "ed", "wood", "nationality"}


def test_stop_extensions_contain_the_one_stop_list():
    for extension in (FEATURE_STOP_WORDS, OBSERVER_STOP_WORDS, SITUATION_STOP_WORDS, RELATION_STOP_WORDS):
        assert STOP_WORDS < extension
    assert FEATURE_STOP_WORDS < OBSERVER_STOP_WORDS < SITUATION_STOP_WORDS
    assert STOP_WORDS < CANDIDATE_STOP_WORDS and "s" not in CANDIDATE_STOP_WORDS and "s" in OBSERVER_STOP_WORDS
    # the answerability reader's extensions: exactly one cue word more than the sets they extend
    assert text.READER_STOP_WORDS - OBSERVER_STOP_WORDS == {"first"} and OBSERVER_STOP_WORDS < text.READER_STOP_WORDS
    assert text.READER_OPENERS - text.QUESTION_OPENERS == {"name"}


def test_entities_drop_openers_and_stop_phrases():
    # trailing particles stay in the phrase (kept as it was: simulated queries are built from these phrases)
    assert entities(COMPARISON) == ["Scott Derrickson and Ed Wood of the"]
    assert entities(WHOSE) == ["Salem", "McCarthyism"]
    assert entities(ROC) == ["Republic of China", "ROC", "Montreal Olympics", "People's Republic of China", "PRC", "ROC"]
    # every phrase kept: the mid-question "What" stays; the pipeline's narrower openers keep "Whose"
    assert "What" in entities(ROC, skip=NO_WORDS)
    assert entities(WHOSE, openers=PIPELINE_OPENERS, skip=NO_WORDS) == ["Whose", "Salem", "McCarthyism"]


def test_sentences_split_at_end_punctuation():
    assert sentences(PASSAGE) == [
        "Wilhelm Conrad Röntgen was a German mechanical engineer and physicist.",
        "In 1895 he produced and detected electromagnetic radiation in a wavelength range known as X-rays!",
        "He received the first Nobel Prize in Physics in 1901.",
    ]
    assert split_sentences("One.  two. Three") == ["One.  two.", "Three"]  # a lowercase start is no boundary
    assert sentences("   ") == []


def test_query_normalisation():
    assert normalize_query("  Who is  Ed Wood? ") == "who is ed wood"
    assert query_key("<search> wood ed  Ed </search>") == "ed wood"
    assert query_key("ed wood") == query_key("Wood, Ed")


def test_similarity_token_f1():
    assert similarity("Ed Wood", "Ed Wood (film)") == pytest.approx(0.8)
    assert similarity("the", "the") == 1.0  # no content word: all words count
    assert similarity("Scott Derrickson", "Ed Wood") == 0.0


def test_old_homes_reexport():
    from agents.steering import features
    from steer_envs.envs import admissible
    from steer_envs.executors.pipeline import roles
    from steer_envs.executors.sim import searcher, situation

    assert admissible.similarity is similarity and admissible.words is words
    assert searcher.question_entities(ROC) == entities(ROC)
    assert situation.normalize_query is normalize_query
    assert situation.content_words("What is the name of Ed Wood's film?") == {"ed", "wood", "film"}
    assert roles.sentences is sentences and roles.entities(WHOSE)[0] == "Whose"
    assert features.goal_entities(WHOSE) == ["salem", "mccarthyism"]
    assert text.__all__ and all(hasattr(text, n) for n in text.__all__)
