"""docs/results_testbed.md: the headroom table the page builder reads from an eval run folder is the table
``steer-envs eval`` wrote there (the old way the page got it), and the page's verdict is computed from it."""

from __future__ import annotations

import pytest

from benchmarks.pages import get_page
from benchmarks.pages.tables import table_lines
from steer_envs.cli.main import main


@pytest.mark.slow
def test_testbed_page_reads_the_headroom_table_eval_wrote(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert (
        main(
            [
                "eval",
                "--method",
                "no_supervision",
                "oracle:lookahead=0",
                "random:p=0.4",
                "--benchmarks",
                "nq",
                "musique",
                "--split",
                "dev",
                "--limit",
                "2",
                "--seeds",
                "1",
                "--no-progress",
                "--out",
                str(runs / "headroom_test"),
            ]
        )
        == 0
    )
    old = (runs / "headroom_test" / "table.md").read_text(encoding="utf-8")
    assert main(["report", "results_testbed", "--out", str(runs), "--doc", str(tmp_path / "testbed.md")]) == 0
    page = (tmp_path / "testbed.md").read_text(encoding="utf-8")
    headroom = page[page.index("## 4. Headroom") : page.index("## 5. Sensitivity")]
    assert table_lines(headroom) == table_lines(old) and len(table_lines(old)) == 2 + 3
    assert "Oracle − none = +" in headroom and "*Not run yet in this folder of runs.*" in page
    assert page.startswith("# Testbed validity") and "## What is weak here" in page
    assert get_page("results_testbed").render(get_page("results_testbed").context(runs, tmp_path / "x.md")) == page
