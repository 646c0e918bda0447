"""Counterfactual credit per role, and the hand-off table's training-seed-aware paired intervals."""
from __future__ import annotations

import numpy as np

from benchmarks.handoff_credit import credit, render
from benchmarks.handoff_results import calibrate, paired_interval, render as render_results
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.records import EpisodeRecord
from steer_envs.executors.pipeline import ROLES


def test_credit_forks_every_handoff_and_reports_each_role():
    report = credit("dev", per_benchmark=1, seeds=2, benchmarks=["nq", "hotpotqa"], progress=False)
    assert set(report["roles"]) <= set(ROLES) and {"planner", "verifier", "summarizer"} <= set(report["roles"])
    for row in report["roles"].values():
        assert row["pairs"] == 2 * row["handoffs"]
        assert abs(row["raises"] + row["lowers"] - row["changes"]) < 1e-9
    assert "| verifier |" in render(report)


def _records(method, gains, seed_shift=0.0):
    out = []
    for b, values in gains.items():
        for i, v in enumerate(values):
            out.append(EpisodeRecord(method, f"{b}/{i}", b, 0, v + seed_shift, 0.0, v, 1, 5, 5))
    return out


def test_paired_interval_resamples_tasks_and_training_seeds():
    base = {"nq": [0.2, 0.4, 0.6], "popqa": [0.0, 1.0]}
    ref = [_records("none", base)]
    same = paired_interval([_records("a", base)], ref, ["nq", "popqa"])
    assert same == {"mean": 0.0, "low": 0.0, "high": 0.0}
    shifted = paired_interval([_records("a", base, 0.1), _records("a", base, 0.3)], ref, ["nq", "popqa"])
    assert np.isclose(shifted["mean"], 20.0) and shifted["low"] <= 20.0 <= shifted["high"] and shifted["high"] > shifted["low"]


def test_calibration_measures_turns_and_over_rejection():
    cal = calibrate(EvalConfig(benchmarks=("triviaqa", "nq"), split="dev", seeds=1, limit=4, max_turns=30))
    assert cal["episodes"] == 8 and cal["agent_turns"] >= 5 and 0.0 <= cal["over_rejection"] <= 1.0
    assert set(cal["turns_by_role"]) == set(ROLES)
    report = {"card": {"split": "dev"}, "calibration": cal, "rows": {}, "comparisons": {}}
    assert "over-rejection" in render_results(report)
