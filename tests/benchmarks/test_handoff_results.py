"""The hand-off table's training-seed-aware paired intervals and its calibration (benchmarks/handoff_results.py)."""

from __future__ import annotations

import numpy as np

from benchmarks.handoff_results import RESAMPLES, calibrate, row_runs
from benchmarks.handoff_results import render as render_results
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.stats import HierarchicalBootstrap
from steer_envs.episodes import EpisodeRecord
from steer_envs.executors.pipeline import ROLES


def _records(method, gains, seed_shift=0.0):
    out = []
    for b, values in gains.items():
        for i, v in enumerate(values):
            out.append(EpisodeRecord(method, f"{b}/{i}", b, 0, v + seed_shift, 0.0, v, 1, 5, 5))
    return out


def _gain(rows_a, rows_b, benchmarks):
    """The hand-off page's interval: the harness bootstrap over one run per training seed of each row."""
    boot = HierarchicalBootstrap(
        [row_runs("a", rows_a), row_runs("b", rows_b)], benchmarks, resamples=RESAMPLES, seed=0
    )
    g = boot.gain("a", "b")[1]
    return {"mean": g.mean, "low": g.low, "high": g.high}


def test_the_handoff_interval_resamples_tasks_and_training_seeds():
    base = {"nq": [0.2, 0.4, 0.6], "popqa": [0.0, 1.0]}
    ref = [_records("none", base)]
    same = _gain([_records("a", base)], ref, ["nq", "popqa"])
    assert same == {"mean": 0.0, "low": 0.0, "high": 0.0}
    shifted = _gain([_records("a", base, 0.1), _records("a", base, 0.3)], ref, ["nq", "popqa"])
    assert (
        np.isclose(shifted["mean"], 20.0)
        and shifted["low"] <= 20.0 <= shifted["high"]
        and shifted["high"] > shifted["low"]
    )
    # one training seed per row: the seed level has nothing to resample, so the interval is narrower
    one_seed = _gain([_records("a", base, 0.2)], ref, ["nq", "popqa"])
    assert np.isclose(one_seed["mean"], 20.0) and one_seed["high"] - one_seed["low"] < shifted["high"] - shifted["low"]


def test_calibration_measures_turns_and_over_rejection():
    cal = calibrate(EvalConfig(benchmarks=("triviaqa", "nq"), split="dev", seeds=1, limit=4, max_turns=30))
    assert cal["episodes"] == 8 and cal["agent_turns"] >= 5 and 0.0 <= cal["over_rejection"] <= 1.0
    assert set(cal["turns_by_role"]) == set(ROLES)
    report = {"card": {"split": "dev"}, "calibration": cal, "rows": {}, "comparisons": {}}
    assert "over-rejection" in render_results(report)
