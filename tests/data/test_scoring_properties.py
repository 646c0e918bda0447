"""Properties of the metrics and the protocol parser over arbitrary text (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from steer_envs.data.scoring import METRICS, asearcher_normalize, f1, squad_f1
from steer_envs.executors.protocol import parse_action
from tests.hostile import hostile_text, megabyte_text
from tests.timing import cpu_seconds_under

text = st.text(max_size=60)


@given(text, st.lists(text, min_size=1, max_size=3))
def test_every_metric_is_a_score_in_unit_interval(prediction, golds):
    for metric in METRICS.values():
        assert 0.0 <= metric(prediction, golds) <= 1.0


@given(text)
def test_an_answer_matches_itself_when_it_has_tokens(answer):
    if asearcher_normalize(answer):
        assert f1(answer, [answer]) == 1.0
    assert squad_f1(answer, [answer]) in (0.0, 1.0)  # 0 only when normalisation leaves nothing on one side


@given(text, text)
def test_adding_golden_answers_never_lowers_the_score(prediction, extra):
    assert f1(prediction, ["paris", extra]) >= f1(prediction, ["paris"])


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_parser_never_crashes_and_classifies(segment):
    action = parse_action(segment)
    assert action.kind in ("search", "answer", "invalid")
    if action.kind == "search":
        assert action.query and action.query == action.query.strip()


@settings(max_examples=300)
@given(hostile_text, st.lists(hostile_text, min_size=1, max_size=3))
def test_scorers_give_a_score_in_unit_interval_on_hostile_text(prediction, golds):
    for metric in METRICS.values():
        assert 0.0 <= metric(prediction, golds) <= 1.0
    assert 0.0 <= metric(None, golds) <= 1.0


@settings(max_examples=6, deadline=None)
@given(megabyte_text)
def test_scorers_take_a_megabyte_answer_in_bounded_time(prediction):
    with cpu_seconds_under(20, typical_s=1.0):  # about 3.4 s for all 6 examples
        for metric in METRICS.values():
            assert 0.0 <= metric(prediction, ["Paris", prediction[:50]]) <= 1.0
