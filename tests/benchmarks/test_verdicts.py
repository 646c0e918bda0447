"""One rule from an interval to a verdict (``benchmarks.harness.verdicts``), and the lines that read it: the shape
line of the rate curves and the closing verdict of a comparison."""

from __future__ import annotations

import pytest

from benchmarks.harness.comparison import shape_line
from benchmarks.harness.stats import Interval
from benchmarks.harness.tables import closing_line
from benchmarks.harness.verdicts import NOT_SHOWN, OPPOSITE, REPRODUCES, tasks_to_tell, verdict


def test_the_interval_decides_whatever_its_mean():
    assert verdict(Interval(2.0, 0.5, 3.5)) == REPRODUCES
    assert verdict(Interval(-2.0, -3.5, -0.5)) == OPPOSITE
    assert verdict(Interval(-2.0, -3.5, -0.5), direction=-1) == REPRODUCES
    assert verdict(Interval(-2.6, -7.3, 2.0)) == NOT_SHOWN  # a mean far from 0 shows nothing when 0 is inside
    assert verdict(Interval(0.3, 0.0, 0.9)) == NOT_SHOWN  # touching 0 is not excluding it
    with pytest.raises(ValueError, match="direction"):
        verdict(Interval(1.0, 0.5, 1.5), direction=0)


def test_tasks_to_tell_scales_the_spread_to_the_mean():
    # half-width 4.65 at mean -2.6 over 35 tasks: ~(4.65/2.6)^2 = 3.2 times the tasks
    assert tasks_to_tell(Interval(-2.6, -7.3, 2.0), 35) == 110  # 35 x (4.6 / 2.6)^2: the arm on 0's side
    assert tasks_to_tell(Interval(0.5, 0.0, 3.0), 35) == 36  # barely open: one more task at least
    assert tasks_to_tell(Interval(float("nan"), float("nan"), float("nan")), 35) is None  # an unscored row
    assert tasks_to_tell(Interval(2.0, 0.5, 3.5), 35) is None  # already shown
    assert tasks_to_tell(Interval(0.0, -1.0, 1.0), 35) is None  # no scale tells a zero mean


def _point(rate, gpi, gain):
    return {"rate": rate, "gain_per_intervention": gpi, "gain": {"mean": gain[0], "low": gain[1], "high": gain[2]}}


def test_the_shape_is_reproduced_only_where_its_interval_excludes_zero():
    shown = shape_line([_point(0.2, 15.0, (2.8, 1.0, 4.7)), _point(1.0, 3.0, (3.0, 1.0, 5.0))])
    assert "The paper's shape: **reproduces**" in shown
    open_question = shape_line([_point(0.14, 0.9, (0.12, -0.94, 1.06)), _point(1.0, 0.2, (0.2, -1.0, 1.4))])
    assert "**not shown**" in open_question and "contains 0" in open_question
    other_best = shape_line([_point(0.2, 1.0, (0.2, 0.1, 0.3)), _point(1.0, 3.0, (3.0, 1.0, 5.0))])
    assert "not highest" in other_best and "**not shown**" in other_best  # never read as reversed
    assert "contains 0" not in other_best  # its lowest point's interval excludes 0: no reason is made up
    losing = shape_line([_point(0.2, -1.0, (-2.0, -3.0, -1.0)), _point(1.0, -5.0, (-5.0, -7.0, -3.0))])
    assert "**not shown**" in losing and "below 0" in losing and "opposite" not in losing


def test_the_closing_verdict_reads_the_paired_interval_by_the_same_rule():
    from benchmarks.harness.stats import MethodSummary

    rows = [
        MethodSummary("no_supervision", 10, 1, {}, 40.0, 1.0, 3.0),
        MethodSummary("steering_rl", 10, 1, {}, 45.0, 1.0, 3.0, avg_gain=Interval(5.0, 1.0, 9.0)),
    ]
    for gap, word in ((Interval(1.0, 0.2, 1.8), "beats"), (Interval(-1.0, -1.8, -0.2), "loses to")):
        line = closing_line(rows, "steering_rl", "best_fixed_rule", {("steering_rl", "best_fixed_rule"): gap})
        assert f"RL steering (the paper's trainer) {word} Best fixed rule (chosen on dev)" in line
    line = closing_line(
        rows, "steering_rl", "best_fixed_rule", {("steering_rl", "best_fixed_rule"): Interval(1, -1, 3)}
    )
    assert "does not significantly beat" in line
