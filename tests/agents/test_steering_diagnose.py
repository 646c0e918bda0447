"""The q(s) diagnostics: hand-computed pieces, and a small real run on sim:default (real tasks, BM25, forks)."""
import numpy as np
import pytest

from agents.steering.diagnose import MeasuredState, between_task_share, diagnose, q_values, state_type


def test_state_types_follow_the_hidden_state():
    assert state_type({"drift": "never_answer"}, 0) == "start"  # turn 0 looks the same whatever is hidden
    assert state_type({"drift": "never_answer"}, 4) == "ramble"
    assert state_type({"evidence_in_hand": True}, 2) == "evidence"
    assert state_type({"fixated": True}, 2) == "fixated"
    assert state_type({}, 1) == "unresolved_t1" and state_type({}, 7) == "unresolved_t3"


def test_q_values_and_between_task_share_hand_computed():
    states = [MeasuredState("a", 0, "start", [0.5], [[1.0, 0.0]]), MeasuredState("a", 1, "start", [0.0], [[0.0, 0.0]])]
    assert q_values(states, "all").tolist() == [0.5, 0.0]  # mean(|1-.5|, |0-.5|) = .5
    assert q_values(states, "one", option=0).tolist() == [0.5, 0.0]
    assert between_task_share(["a", "a", "b", "b"], np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(1.0)
    assert between_task_share(["a", "b", "a", "b"], np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(0.0)


@pytest.mark.slow
def test_small_diagnosis_is_deterministic_and_consistent():
    a = diagnose(train_tasks=4, rollouts=2, test_tasks=7, N=2, progress=False)
    b = diagnose(train_tasks=4, rollouts=2, test_tasks=7, N=2, progress=False)
    for label in ("q_all", "q_search"):
        assert a[label] == b[label]  # same seed, same measurements
        r = a[label]
        assert -1.0 <= r["reliability_spearman"] <= 1.0 and 0.0 <= r["between_task_share_test"] <= 1.0 + 1e-9
        assert sum(t["test_states"] for t in r["types"].values()) == a["test_states"]
        assert sum(t["train_states"] for t in r["types"].values()) == a["train_states"]
        assert r["mean_test"] >= 0.0
    assert a["test_tasks"] == 14 and "| q_all |" in a["markdown"]
