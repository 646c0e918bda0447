"""studies/reader_rl: at a toy size every run of the study trains, is rate-matched on dev and evaluated on test, a
run without the reader shares its reader run's reference episodes, each run's summary carries its trainers' logs and
dev scores, and the page renders from the summaries alone; the committed page is what the committed summaries give."""

from __future__ import annotations

import json

import pytest

from studies.reader_rl.page import PAGE, READER_RL, RULE, Results, joint, main, pair_parts, render
from studies.reader_rl.run import RUNS, STUDY_FILE
from studies.reader_rl.run import main as run_main


def test_the_committed_page_equals_its_rebuild(tmp_path):
    assert main(["--out", str(tmp_path / "page.md")]) == 0
    assert (tmp_path / "page.md").read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")


def test_every_run_shares_a_run_listed_before_it():
    names = [r.name for r in RUNS]
    for i, run in enumerate(RUNS):
        assert run.shares is None or run.shares in names[:i], run.name


@pytest.mark.slow
def test_quick_study_summaries_and_page(tmp_path, monkeypatch):
    from steer_envs.paths import REPO_ROOT

    monkeypatch.chdir(REPO_ROOT)  # the reader's config is named relative to the repository root
    out, results = tmp_path / "runs", tmp_path / "results"
    assert run_main(["--quick", "--out", str(out), "--results", str(results)]) == 0
    # the run without the reader links its reader run's folders: the shared rows are the same episodes
    assert (out / "loopy_noreader" / "test").resolve() == (out / "loopy_reader" / "test").resolve()
    study = json.loads((results / "loopy_reader" / "sim_loopy" / STUDY_FILE).read_text(encoding="utf-8"))
    assert study["training"] and all(rounds for rounds in study["training"].values())
    assert [s["rate"] >= 0 for s in study["dev"]["steering_rl"]] == [True, True]

    table = joint(Results(results), pair_parts("loopy_reader", "loopy_noreader"))
    assert {READER_RL, "RL steering", RULE, "no_supervision"} <= set(table.names)
    iv = table.gain(READER_RL, RULE)
    assert iv.low <= iv.mean <= iv.high
    page = render(results)
    assert "**Verdict: " in page and "## `sim:weak`" in page and "## Wall times" in page
    # resumed: nothing is retrained, the summaries are rewritten the same
    before = (results / "weak_noreader" / "sim_weak" / "episodes.jsonl.gz").read_bytes()
    assert run_main(["--quick", "--out", str(out), "--results", str(results), "--runs", "weak_noreader"]) == 0
    assert (results / "weak_noreader" / "sim_weak" / "episodes.jsonl.gz").read_bytes() == before
