"""The testbed can tell good steering from bad: an oracle that knows the hidden state gains far more than random
steering, and far more than any fixed rule (acceptance numbers on test come from the harness; this is a small check)."""
from __future__ import annotations

import pytest

from benchmarks.headroom import format_table, run, summary


@pytest.mark.slow
def test_oracle_has_headroom_and_random_and_fixed_rules_do_not():
    results = run("sim:default", "dev", limit=12, seeds=1, p=0.4, max_at=1, lookahead=0)
    assert len(results["none"].interventions) == len(results["oracle"].interventions) > 60
    oracle_gain, best, best_gain = summary(results)
    random_gain = results["random:p=0.4"].mean_f1 - results["none"].mean_f1
    table = format_table(results)
    assert oracle_gain >= 10, table
    assert random_gain < oracle_gain / 2, table
    assert best_gain < oracle_gain / 2, table
    assert 0.7 <= results["random:p=0.4"].interventions_per_task <= 1.3, table
