"""Worked examples for the answer metrics, including where ASearcher F1 and SQuAD F1 disagree."""

import pytest

from steer_envs.data import scoring
from steer_envs.data.scoring import asearcher_normalize, cover_em, f1, get_metric, squad_em, squad_f1, squad_normalize
from steer_envs.errors import UnknownNameError


def test_normalisers():
    assert asearcher_normalize("The  U.S.-born  Actor!") == "the u s born actor"
    assert squad_normalize("The  U.S.-born  Actor!") == "usborn actor"


def test_exact_answer_scores_one_everywhere():
    for metric in (f1, squad_f1, squad_em, cover_em):
        assert metric("Paris", ["paris"]) == 1.0


def test_articles_kept_by_asearcher_dropped_by_squad():
    # ASearcher: pred {the, beatles}, gold {beatles}: P = 1/2, R = 1 -> F1 = 2/3.
    assert f1("The Beatles", ["Beatles"]) == pytest.approx(2 / 3)
    # SQuAD drops "the": exact match.
    assert squad_f1("The Beatles", ["Beatles"]) == 1.0
    assert squad_em("The Beatles", ["Beatles"]) == 1.0


def test_sets_versus_bags():
    # ASearcher uses sets: pred {new, york} vs gold {new, york}: 1.0 even with a repeated token.
    assert f1("new new york", ["new york"]) == 1.0
    # SQuAD uses bags: overlap 2, P = 2/3, R = 1 -> 0.8.
    assert squad_f1("new new york", ["new york"]) == pytest.approx(0.8)


def test_punctuation_becomes_space_in_asearcher():
    # ASearcher: "u.s." -> "u s" (2 tokens) matches gold "U S"; SQuAD: "us" vs "u s" -> no overlap.
    assert f1("u.s.", ["U S"]) == 1.0
    assert squad_f1("u.s.", ["U S"]) == 0.0


def test_max_over_golden_answers_and_partial_credit():
    golds = ["Wilhelm Conrad Röntgen", "Röntgen"]
    assert f1("Röntgen", golds) == 1.0
    # pred {wilhelm, röntgen} vs gold 1 {wilhelm, conrad, röntgen}: P=1, R=2/3 -> 0.8; vs gold 2: P=1/2,R=1 -> 2/3
    assert f1("Wilhelm Röntgen", golds) == pytest.approx(0.8)


def test_cover_em():
    assert cover_em("It was Wilhelm Conrad Röntgen in 1901", ["Wilhelm Conrad Röntgen"]) == 1.0
    assert cover_em("Wilhelm Röntgen", ["Wilhelm Conrad Röntgen"]) == 0.0


def test_no_answer_scores_zero():
    assert f1(None, ["x"]) == 0.0 and squad_em("", ["x"]) == 0.0


def test_unknown_metric_lists_valid_ones():
    with pytest.raises(UnknownNameError, match="valid metrics: cover_em, em, f1"):
        get_metric("bleu")


def test_score_all_keys():
    assert set(scoring.score_all("a", ["a"])) == {"f1", "squad_f1", "squad_em", "cover_em", "em"}
