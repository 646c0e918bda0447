"""Every results page opens with the same box, right under its title: what the page shows and what it does not
(the setting, the comparison, and the limits a reader needs before reading a number). Fast: reads the committed
pages, runs nothing."""

from __future__ import annotations

import pytest

from steer_envs.paths import REPO_ROOT

PAGES = sorted((REPO_ROOT / "docs").glob("results*.md"))
SHOWS = "> **What this page shows.**"
NOT_SHOWN = "> **What it does not show.**"


def test_there_are_results_pages():
    names = {p.name for p in PAGES}
    assert {"results.md", "results_testbed.md", "results_actguide_barrier.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_box_opens_the_page(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# "), f"{page.name} does not start with its title"
    first_section = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    head = lines[:first_section]
    shows = [i for i, line in enumerate(head) if line.startswith(SHOWS)]
    not_shown = [i for i, line in enumerate(head) if line.startswith(NOT_SHOWN)]
    assert shows and not_shown, f"{page.name}: the box is missing before the first `## ` heading"
    assert shows[0] < not_shown[0], f"{page.name}: the box's two parts are out of order"
    # one block quote right under the title: only blank lines before it, no break inside it
    assert all(not line.strip() for line in lines[1 : shows[0]]), f"{page.name}: text between the title and the box"
    assert all(line.startswith(">") for line in lines[shows[0] : not_shown[0] + 1]), f"{page.name}: the box is broken"


@pytest.mark.parametrize("name", ["results_drift", "results_llm_headline"])
def test_pages_built_from_committed_summaries_equal_their_rebuild(name, tmp_path):
    """The box lives in the page's template, so a rebuild keeps it: the committed page is what the builder gives."""
    from benchmarks.pages import get_page

    page = get_page(name)
    rebuilt = page.build(REPO_ROOT / page.out, tmp_path / f"{name}.md").read_text(encoding="utf-8")
    assert rebuilt == (REPO_ROOT / page.doc).read_text(encoding="utf-8")


def test_the_barrier_study_page_equals_its_rebuild(tmp_path):
    from studies.actguide_barrier.page import PAGE, main

    assert main(["--page", str(tmp_path / "page.md")]) == 0
    assert (tmp_path / "page.md").read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
