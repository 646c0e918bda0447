"""studies/drift_components: the probe separates what a feature carries from what it does not, and the study runs
end to end on a tiny trainer (every number it reports is where the summary says)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studies.drift_components.run import KINDS, TARGETS, labels, main, probe_auc


def test_the_probe_reads_a_feature_that_carries_the_label_and_not_one_that_does_not():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    groups = np.repeat(np.arange(40), 10)
    carried = np.column_stack([y + rng.normal(0, 0.3, 400), rng.normal(size=400)])
    noise = rng.normal(size=(400, 2))
    assert probe_auc(carried, y, groups) > 0.9
    assert 0.35 < probe_auc(noise, y, groups) < 0.65
    assert probe_auc(noise, np.zeros(400, dtype=int), groups) is None  # one class: no AUC


def test_labels_are_one_kind_against_the_rest_or_any_drift():
    kinds = ["side_goal", None, "redundant", None]
    assert labels(kinds, "side_goal").tolist() == [1, 0, 0, 0]
    assert labels(kinds, "any_drift").tolist() == [1, 0, 1, 0]


@pytest.mark.slow
def test_the_study_runs_end_to_end(tmp_path):
    assert main(["--quick", "--out", str(tmp_path / "runs"), "--summary", str(tmp_path), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["probe_auc"]) == {"statistics", "untrained_state", "trained_state"}
    assert all(set(aucs) == set(TARGETS) for aucs in summary["probe_auc"].values())
    assert set(summary["slow_path"]) == set(KINDS)
    assert summary["states"] == sum(summary["kinds"].values()) + summary["no_drift"]
    signal = summary["training"]
    assert signal["rounds"] == 1 and signal["states_labelled"] == 4  # the quick trainer: m=1 round of k=4 states
    assert 0 <= signal["grpo_states"] <= signal["states_labelled"] and 0 <= signal["zero_advantage_share"] <= 1
    assert summary["code"]["commits"] and "studies/drift_components/run.py" in summary["code"]["files"]
