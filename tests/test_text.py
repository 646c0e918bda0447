"""steer_envs.text: each helper on real question / passage text, and the old homes re-exporting it."""

from __future__ import annotations

import pytest

from steer_envs import text
from steer_envs.text import (
    CANDIDATE_STOP_WORDS,
    FEATURE_STOP_WORDS,
    NO_WORDS,
    OBSERVER_STOP_WORDS,
    PIPELINE_OPENERS,
    RELATION_STOP_WORDS,
    SITUATION_STOP_WORDS,
    STOP_WORDS,
    content_words,
    entities,
    normalize_query,
    query_key,
    sentences,
    similarity,
    split_sentences,
    tokens,
    words,
)

# real questions of the shipped data (HotpotQA, TriviaQA, 2Wiki) and a real passage
COMPARISON = "Were Scott Derrickson and Ed Wood of the same nationality?"
WHOSE = "Whose play about the Salem witch trials in the 17th century drew parallels to McCarthyism in the 1950s?"
ROC = (
    "The Republic of China (ROC) did not compete at the Montreal Olympics in 1976 because the People's Republic "
    "of China (PRC) pressured the organisers to stop them competing under that name. What name did the ROC use "
    "when it next competed in 1984?"
)
PASSAGE = (
    "Wilhelm Conrad Röntgen was a German mechanical engineer and physicist. In 1895 he produced and detected "
    "electromagnetic radiation in a wavelength range known as X-rays!  He received the first Nobel Prize in "
    "Physics in 1901."
)


def test_words_lowercase_ascii_runs():
    assert words("Who directed 'In Bruges' (2008)?") == ["who", "directed", "in", "bruges", "2008"]
    assert words("Röntgen's") == ["r", "ntgen", "s"]  # ASCII runs only: what the feature hashes were built on


def test_tokens_keep_names_whole():
    assert tokens("the People's Republic of Röntgen’s time") == [
        "the",
        "People's",
        "Republic",
        "of",
        "Röntgen’s",
        "time",
    ]


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
    assert entities(ROC) == [
        "Republic of China",
        "ROC",
        "Montreal Olympics",
        "People's Republic of China",
        "PRC",
        "ROC",
    ]
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


# -- the one entity extractor: each reader's named rule set, pinned on hand-written questions -------------------
BEATLES = "Which album did The Beatles record after Abbey Road?"
QUOTED = 'Who wrote "The Hobbit" and "Leaf by Niggle"?'
PARTICLES = "Who was the teacher of Ludwig van Beethoven and Otto von Bismarck?"
CONGO = "What is the capital of the Republic of the Congo?"
TWO = "Whose wife was Anne of Cleves? Who Was the King of England?"
DRUMMER = "In which city did The Beatles play? Who Was the drummer?"


def test_default_rules_read_capitalised_phrases_as_written():
    assert text.ENTITY_RULES == text.EntityRules() and entities(BEATLES) == entities(BEATLES, text.ENTITY_RULES)
    assert entities(BEATLES) == ["The Beatles", "Abbey Road"]  # no leading trim: "The" stays mid-question
    assert entities(QUOTED) == ["The Hobbit", "Leaf", "Niggle"]  # no quoted titles; "Who" at the start: an opener
    assert entities(PARTICLES) == ["Ludwig", "Beethoven and Otto von Bismarck"]  # "van" is no particle here
    assert entities(CONGO) == ["Republic of the Congo"]
    assert entities(TWO) == ["Anne of Cleves", "Who Was the King of England"]  # "Whose" opener; mid "Who" kept
    assert entities(TWO, text.PIPELINE_ENTITY_RULES) == ["Whose", "Anne of Cleves", "Who Was the King of England"]
    assert entities(TWO, text.GOAL_ENTITY_RULES) == ["anne of cleves", "who was the king of england"]
    assert entities("Name the King of Spain.", text.READER_ENTITY_RULES) == ["the king of spain"]  # "Name" opener
    assert entities("Name the King of Spain.", text.GOAL_ENTITY_RULES) == ["name the king of spain"]


def test_candidate_rules_give_clean_searchable_names():
    rules = text.CANDIDATE_ENTITY_RULES
    # quoted titles first, then the spans; repeats once; one-letter spans and single function words out
    assert entities(QUOTED, rules) == ["The Hobbit", "Leaf by Niggle", "Hobbit", "Leaf", "Niggle"]
    assert entities(BEATLES, rules) == ["Beatles", "Abbey Road"]  # "The" trimmed from the front of the span
    assert entities("After The Beatles, In The Hague: A X?", rules) == ["Beatles", "Hague"]  # repeated trim
    assert entities(PARTICLES, rules) == ["Ludwig van Beethoven and Otto von Bismarck"]  # the wider particles
    assert entities(TWO, rules) == ["Anne of Cleves", "Who Was the King of England"]
    assert entities(DRUMMER, rules) == ["Beatles", "Who Was"]  # a question span: only a single stop word is out
    assert entities('"Ed Wood" and Ed Wood', rules) == ["Ed Wood"]
    # why ``skip`` alone drops the question words and auxiliaries (the old copy also had a case-sensitive list)
    assert set("who what which when where how why is are was were did does do".split()) <= CANDIDATE_STOP_WORDS
    assert rules.trim_leading == {w.capitalize() for w in text.LEADING_FUNCTION_WORDS}
    assert entities("Visit In the Hague", rules) == ["Visit In the Hague"]  # only a span's *first* word is trimmed
    assert entities("In the Hague", rules) == ["the Hague"]  # a lowercase "the" is a particle, not trimmed
    # document spans: positions of the pattern match ("The" trimmed, the match's start kept); a span of function
    # words only ("Who Was") is dropped
    assert text.entity_spans(DRUMMER, text.CANDIDATE_SPAN_RULES) == [("Beatles", 18, 29)]
    assert text.entity_spans(TWO, text.CANDIDATE_SPAN_RULES) == [
        ("Anne of Cleves", 15, 29),
        ("Who Was the King of England", 31, 58),
    ]


def test_argument_rules_drop_phrases_that_open_with_a_particle():
    rules = text.ARGUMENT_ENTITY_RULES
    assert entities(BEATLES, rules) == ["The Beatles", "Abbey Road"]
    assert entities(PARTICLES, rules) == ["Beethoven and Otto von Bismarck"]  # "of Ludwig" is one phrase, dropped
    assert entities(CONGO, rules) == []  # "the Republic of the Congo" opens with "the"
    assert entities(TWO, rules) == ["Whose", "Anne of Cleves", "Who Was the King of England"]


def test_rules_reject_bad_fields_with_the_fix():
    with pytest.raises(TypeError, match=r"frozenset\(\['the'\]\)"):
        entities(COMPARISON, skip="the")
    with pytest.raises(TypeError, match="re.compile"):
        text.EntityRules(pattern=r"[A-Z]\w+")
    with pytest.raises(ValueError, match="min_length=1"):
        text.EntityRules(min_length=0)
    assert entities("What is Ed Wood?", skip={"ed wood"}) == []  # a plain set of words works as before


def test_every_old_extractor_is_the_one_extractor():
    from agents.steering import features, interventions
    from steer_envs.envs import admissible
    from steer_envs.executors.pipeline import roles
    from steer_envs.executors.sim import searcher
    from steer_envs.reader import features as reader_features

    for question in (BEATLES, QUOTED, PARTICLES, CONGO, TWO, ROC):
        assert admissible.question_entities(question) == entities(question, text.CANDIDATE_ENTITY_RULES)
        assert roles.entities(question) == entities(question, text.PIPELINE_ENTITY_RULES)
        assert reader_features.entities(question) == entities(question, text.READER_ENTITY_RULES)
        assert features.goal_entities(question) == entities(question, text.GOAL_ENTITY_RULES)
        assert searcher.question_entities(question) == entities(question)
    args = interventions.argument_candidates({"goal": TWO, "transcript": ""})
    assert args[:3] == ["Whose", "Anne of Cleves", "Who Was the King of England"]


def test_no_second_entity_extractor_in_the_sources():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    defs, patterns = [], []
    for package in ("steer_envs", "agents", "baselines", "benchmarks"):
        for path in sorted((root / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            defs += [f"{path.relative_to(root)}: {m}" for m in re.findall(r"def .*entities.*", source)]
            if path.name != "text.py" or path.parent.name != "steer_envs":  # a capitalised-word regex elsewhere
                patterns += [f"{path.relative_to(root)}" for _ in re.findall(r"\[A-Z\]\[\\w", source)]
    # what `grep -rn "def .*entities" steer_envs agents baselines benchmarks` finds: the one extractor only
    assert defs == ["steer_envs/text.py: def entities("], defs
    assert patterns == [], patterns
