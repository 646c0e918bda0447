"""docs/results_actguide.md: the page builder renders the same tables as the old generator, from a small run folder
made here (every variant trained for a few iterations, one task per benchmark, one training seed)."""
from __future__ import annotations

import pytest

from benchmarks.pages import legacy
from benchmarks.pages.tables import table_lines


@pytest.mark.slow
def test_actguide_page_builder_writes_the_old_generators_tables(tmp_path):
    from benchmarks.harness.actguide_doc import Plan, evaluate_all, train_all, write_page
    from benchmarks.pages import get_page

    plan = Plan(tmp_path / "runs", seeds=1, ablation_seeds=1, eval_tasks_per_benchmark=1, eval_rollouts=8,
                barrier_tasks_per_benchmark=1)
    plan.setting.update(tasks_per_benchmark=2, budget=48, batch_tasks=2)
    plan.base.update(tasks_per_benchmark=2, budget=48, batch_tasks=2, pretrain_tasks_per_benchmark=4)
    commands = train_all(plan)
    records = evaluate_all(plan)
    old = legacy.actguide_write_page(plan, commands, records, tmp_path / "legacy" / "results_actguide.md", "cmd")
    new = write_page(plan, commands, records, tmp_path / "docs" / "results_actguide.md", "cmd")
    old_text, new_text = old.read_text(encoding="utf-8"), new.read_text(encoding="utf-8")
    assert table_lines(new_text) == table_lines(old_text)
    assert len(table_lines(new_text)) > 40 and "| ACTGUIDE-RL |" in new_text
    assert new_text == old_text  # prose from the templates and code facts read from the code say the same
    assert (new.parent / "results" / "actguide_budget.png").is_file()
    rebuilt = get_page("results_actguide").build(plan.out, tmp_path / "rebuilt.md")  # no runs: the logs read back
    assert rebuilt.read_text(encoding="utf-8") == new_text
