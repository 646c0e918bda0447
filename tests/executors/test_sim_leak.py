"""The testbed's observability rule: the simulator's <think> text reveals nothing about its hidden state beyond the
observable situation (acceptance: ROC AUC within 0.02 on 2,000 held-out steps), and the check itself can fail."""

from __future__ import annotations

import pytest

from benchmarks.leak_test import MAX_DIFFERENCE, collect, measure
from steer_envs.executors.sim.searcher import SimSearcher


@pytest.mark.slow
def test_thoughts_do_not_reveal_hidden_state():
    train, held = collect("sim:default", "train", 3000, seed=0), collect("sim:default", "test", 2000, seed=1)
    results = measure(train, held)
    by_target = {r.target: r for r in results}
    # each result counts its positives among the held-out steps' hidden labels: any drift, or one drift mode
    assert by_target["any drift"].positives == sum(s.label is not None for s in held) > 100
    for r in results:
        assert r.heldout == len(held)
        if r.target != "any drift":
            assert r.positives == sum(s.label == r.target for s in held), r
    # every drift mode frequent enough on both sides (20 train, 10 held-out positives) is a target
    frequent = {
        m
        for m in {s.label for s in train if s.label}
        if sum(s.label == m for s in train) >= 20 and sum(s.label == m for s in held) >= 10
    }
    assert set(by_target) == {"any drift"} | frequent
    assert all(r.difference <= MAX_DIFFERENCE for r in results), results


@pytest.mark.slow
def test_the_leak_test_catches_a_simulator_that_names_its_state(monkeypatch):
    """A simulator that says 'to be sure' only when it loops or guesses is caught (the old sim's failure)."""
    honest_think = SimSearcher._think

    def leaky_think(self, act, query=None, answer=None):
        words = honest_think(self, act, query, answer)
        s = self.state
        return words + (" Let me search again to make sure." if (s.drift or s.premature) else " Let me search.")

    monkeypatch.setattr(SimSearcher, "_think", leaky_think)
    results = measure(collect("sim:default", "train", 1500, seed=0), collect("sim:default", "test", 600, seed=1))
    assert max(r.difference for r in results) > MAX_DIFFERENCE
