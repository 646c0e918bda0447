"""docs/results_actguide.md: the generator writes its page with the page builder, and rebuilding it from the run
folder alone gives the same text; the run folder is made once per session (``actguide_doc --quick``: every variant
trained briefly, one training seed)."""

from __future__ import annotations

import json

import pytest

from benchmarks.pages.tables import table_lines


@pytest.mark.slow
def test_actguide_page_is_rebuilt_from_its_run_folder(tmp_path, actguide_quick_run):
    from benchmarks.harness.actguide_doc import PAGE_FILE, Plan, evaluate_all, train_all, write_page
    from benchmarks.pages import get_page

    # the run folder of ``actguide_doc --quick`` (tests/conftest.py): every variant trained, every episode played;
    # train_all / evaluate_all read them back
    out = actguide_quick_run[0]
    plan = Plan(out).make_quick()
    commands = train_all(plan)
    records = evaluate_all(plan)
    command = json.loads((out / PAGE_FILE).read_text(encoding="utf-8"))["command"]  # the one the run's page shows
    new = write_page(plan, commands, records, tmp_path / "docs" / "results_actguide.md", command)
    new_text = new.read_text(encoding="utf-8")
    assert len(table_lines(new_text)) > 40 and "| ACTGUIDE-RL |" in new_text
    assert (new.parent / "results" / "actguide_budget.png").is_file()
    rebuilt = get_page("results_actguide").build(plan.out, tmp_path / "rebuilt.md")  # no runs: the logs read back
    assert rebuilt.read_text(encoding="utf-8") == new_text
