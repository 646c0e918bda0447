"""The testbed can tell good steering from bad: an oracle gains >= 10 F1, random steering clearly less."""
from __future__ import annotations

import pytest

from benchmarks.headroom import format_table, run


@pytest.mark.slow
def test_oracle_has_headroom_and_random_does_not():
    results = run("sim:default", "test", limit=25)
    none, oracle, rand = (results[k]["all"] for k in ("none", "oracle", "random"))
    assert none.n == oracle.n == rand.n == 25 * 7
    gain_oracle = 100 * (oracle.f1 - none.f1) / none.n
    gain_random = 100 * (rand.f1 - none.f1) / none.n
    assert gain_oracle >= 10, format_table(results)
    assert gain_random < gain_oracle / 2, format_table(results)
    assert 0.9 <= rand.interventions / rand.n <= 1.0
