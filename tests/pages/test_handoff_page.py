"""docs/results_handoff.md: the page builder renders the same tables as the old generator, from a small run folder
made here (every hand-off row, one task per benchmark, one seed, one training seed)."""
from __future__ import annotations

import json

import pytest

from benchmarks.pages import get_page, legacy
from benchmarks.pages.tables import table_lines

TINY_RL = "m=1,k=4,G=2,N=1,bank_tasks=3,dev_tasks=1"
SMALL = {"handoff_zero_shot": "dev_tasks=1", "handoff_best_fixed_rule": "dev_tasks=1,seeds=1,max_at=1"}


@pytest.mark.slow
def test_handoff_page_builder_writes_the_old_generators_tables(tmp_path):
    from benchmarks.handoff_results import run

    out = tmp_path / "runs"
    report = run(out, split="dev", limit=1, seeds=1, train_seeds=(0,), max_turns=12, train_options=TINY_RL,
                 benchmarks=("nq", "hotpotqa"), method_options=SMALL)
    stored = json.loads((out / "results_handoff.json").read_text(encoding="utf-8"))
    assert stored["rows"] == json.loads(json.dumps(report["rows"]))
    card = stored["card"]  # the harness's setting card, with the pipeline's profile hash
    assert card["split"] == "dev" and card["tasks"] == {"nq": 1, "hotpotqa": 1} and card["commits"]
    assert card["executor_hash"].startswith("default.json sha256:")
    new = get_page("results_handoff").build(out, tmp_path / "results_handoff.md").read_text(encoding="utf-8")
    old = legacy.handoff_render(stored)
    assert table_lines(new) == table_lines(old)
    assert len(table_lines(new)) == 2 + 2 + 2 + 11 + 2 + 3  # calibration (2 benchmarks), 11 rows, 3 comparisons
    assert "| RL steering, every hand-off, slow path may pass |" in new
    assert "| RL steering, every hand-off, slow path may pass, its pass reads the fast path's z |" in new
    assert new == (out / "results_handoff.md").read_text(encoding="utf-8")  # the generator wrote it with the builder
