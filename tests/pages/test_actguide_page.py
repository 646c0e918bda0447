"""docs/results_actguide.md: the page builder renders the same tables as the old generator, from a small run folder
made once per session (``actguide_doc --quick``: every variant trained briefly, one training seed)."""
from __future__ import annotations

import json

import pytest

from benchmarks.pages import legacy
from benchmarks.pages.tables import table_lines


@pytest.mark.slow
def test_actguide_page_builder_writes_the_old_generators_tables(tmp_path, actguide_quick_run):
    from benchmarks.harness.actguide_doc import PAGE_FILE, Plan, evaluate_all, train_all, write_page
    from benchmarks.pages import get_page

    # the run folder of ``actguide_doc --quick`` (tests/conftest.py): every variant trained, every episode played;
    # train_all / evaluate_all read them back
    out = actguide_quick_run[0]
    plan = Plan(out).make_quick()
    commands = train_all(plan)
    records = evaluate_all(plan)
    command = json.loads((out / PAGE_FILE).read_text(encoding="utf-8"))["command"]  # the one the run's page shows
    old = legacy.actguide_write_page(plan, commands, records, tmp_path / "legacy" / "results_actguide.md", command)
    new = write_page(plan, commands, records, tmp_path / "docs" / "results_actguide.md", command)
    old_text, new_text = old.read_text(encoding="utf-8"), new.read_text(encoding="utf-8")
    assert table_lines(new_text) == table_lines(old_text)
    assert len(table_lines(new_text)) > 40 and "| ACTGUIDE-RL |" in new_text
    assert new_text == old_text  # prose from the templates and code facts read from the code say the same
    assert (new.parent / "results" / "actguide_budget.png").is_file()
    rebuilt = get_page("results_actguide").build(plan.out, tmp_path / "rebuilt.md")  # no runs: the logs read back
    assert rebuilt.read_text(encoding="utf-8") == new_text
