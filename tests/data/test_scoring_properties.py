"""Properties of the metrics and the protocol parser over arbitrary text (hypothesis)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from steer_envs.data.scoring import METRICS, asearcher_normalize, f1, squad_f1
from steer_envs.executors.protocol import parse_action

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
