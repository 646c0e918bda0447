"""docs/results.md: built from the compact summaries only. The generator writes one summary per finished profile
(small, with per-episode metrics, dev choices, card and timings), the page is rebuilt from the summaries with no run
folder, and the committed page is exactly what the committed summaries give."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from benchmarks.harness.protocols import OWN_RATE_ROWS
from benchmarks.harness.results_summary import EPISODES_FILE, SUMMARY_FILE, SUMMARY_ROOT, read_episodes
from benchmarks.pages import get_page
from benchmarks.pages.results import PROFILES
from steer_envs.cli.main import main as cli_main
from steer_envs.paths import REPO_ROOT
from tests.benchmarks.support import results_doc_argv, summaries_of


@pytest.mark.slow
def test_results_page_is_rebuilt_from_the_summaries_alone(tmp_path):
    from benchmarks.harness.results_doc import main as results_main

    runs, doc = tmp_path / "runs", tmp_path / "docs" / "results.md"
    argv = results_doc_argv(
        runs, doc, "--without", "filtered_bc", "--without", "sb3_ppo", train_seeds=1, max_probes=2, llm_limit=0
    )
    assert results_main(argv) == 0  # runs everything, writes the summary, then the page from the summaries
    page = doc.read_text(encoding="utf-8")
    root = summaries_of(runs)
    summary = json.loads((root / "sim_default" / SUMMARY_FILE).read_text(encoding="utf-8"))
    episodes = read_episodes(root / "sim_default" / EPISODES_FILE)
    labels = [label for row in summary["rows"].values() for label in row["labels"]]
    assert len(episodes) == summary["episodes"]["count"] == len(labels) * 2  # nq + musique, 1 task, 1 seed each
    assert {e["label"] for e in episodes} == set(labels) and all(0 <= e["f1"] <= 1 for e in episodes)
    assert sum(f.stat().st_size for f in (root / "sim_default").iterdir()) < 2_000_000
    assert summary["card"]["commits"] and summary["parts"] and summary["dev"]["choices"]
    # the code behind it, for the freshness check: the commits of the card and the files the evaluations loaded
    assert summary["code"]["commits"] == summary["card"]["commits"]
    assert {"steer_envs/envs/steering.py", "benchmarks/harness/runner.py"} <= set(summary["code"]["files"])
    assert summary["dev"]["bar_selection"]["chosen"] and "choose on dev + train" in summary["seconds"]
    assert list(summary["rows"])[-5:] == [*OWN_RATE_ROWS, "oracle"]  # a fresh run has planning and verification
    # the page holds the rows, the intervals against no supervision and against the best fixed rule
    for name in ("No supervision", "Random (p chosen on dev)", "Best fixed rule (chosen on dev)", "RL steering"):
        assert f"| {name}" in page or f"| **★ {name}" in page
    assert "### Paired against no supervision and the best fixed rule (`sim:default`)" in page
    assert "| Planning, RL |" in page and "Not measured on this profile yet" not in page
    pair = next(p for p in summary["vs_rule"] if p["a"] == "steering_rl")
    assert f"{pair['mean']:+.2f} [{pair['low']:+.2f}, {pair['high']:+.2f}]" in page
    assert "> **Dry run**" in page and "--summaries" not in page and str(tmp_path) not in page
    for other in ("sim:loopy", "sim:r1searcher"):  # not summarised: listed with the command that measures them
        assert f"## Rate-matched comparison on `{other}`, test split\n\nNot measured yet." in page
        assert f"--profiles {other} --limit 1 " in page
    shutil.rmtree(runs)  # `steer-envs report results` needs no run folder
    rebuilt = tmp_path / "rebuilt" / "results.md"
    rebuilt.parent.mkdir()
    assert cli_main(["report", "results", "--out", str(root), "--doc", str(rebuilt)]) == 0
    assert rebuilt.read_text(encoding="utf-8") == page


def test_an_empty_summary_folder_gives_a_page_of_profiles_not_measured_yet(tmp_path):
    doc = get_page("results").build(tmp_path, tmp_path / "results.md")
    text = doc.read_text(encoding="utf-8")
    assert text.count("Not measured yet.") == len(PROFILES) + 1  # and the LLM section
    assert "| Method |" not in text and "*Setting:" not in text  # no number that no summary holds
    for name in ("results_drift.md", "results_testbed.md", "results_handoff.md", "results_llm_headline.md"):
        assert f"]({name})" in text
    assert "](results_actguide_barrier.md)" in text and "**What it does not show.**" in text


def test_the_committed_page_is_what_the_committed_summaries_give(tmp_path):
    rebuilt = get_page("results").build(SUMMARY_ROOT, tmp_path / "results.md")
    assert rebuilt.read_text(encoding="utf-8") == (REPO_ROOT / "docs" / "results.md").read_text(encoding="utf-8")


def test_every_committed_summary_was_measured_by_committed_code_of_this_branch():
    from benchmarks.harness.results_summary import LLM_DIR

    cards = {e: SUMMARY_ROOT / e.replace(":", "_") / SUMMARY_FILE for e in PROFILES}
    cards["zero-shot LLM"] = SUMMARY_ROOT / LLM_DIR / SUMMARY_FILE
    for name, path in cards.items():
        if not path.is_file():
            continue
        for commit in json.loads(path.read_text(encoding="utf-8"))["card"]["commits"]:
            assert "dirty" not in commit and commit != "unknown", f"{name}: {commit}"
            ancestor = subprocess.run(["git", "-C", str(REPO_ROOT), "merge-base", "--is-ancestor", commit, "HEAD"])
            assert ancestor.returncode == 0, f"{name}: {commit} is not an ancestor of HEAD"


def test_the_drift_family_section_reads_each_levels_ladder_and_comparison(tmp_path):
    import json
    import re

    from benchmarks.pages.results import drift_markdown
    from steer_envs.paths import REPO_ROOT

    drift = REPO_ROOT / "docs" / "results" / "drift"
    text = drift_markdown(drift)
    ladder = json.loads((drift / "drift1" / "ladder.json").read_text(encoding="utf-8"))
    ceiling = next(r for r in ladder["rows"] if r["rung"] == "learnable_ceiling")["vs_best_fixed_rule"]
    setting = (drift / "drift1" / "ladder.md").read_text(encoding="utf-8").splitlines()[0]
    ladder_commit = re.search(r"commit `([0-9a-f]{7})`", setting).group(1)
    assert f"| `sim:drift1` | {ceiling['mean']:+.2f} [{ceiling['low']:+.2f}, {ceiling['high']:+.2f}] |" in text
    assert "`sim:drift3`" in text and "**synthetic**" in text
    assert f"`{ladder_commit}`" in text.split("*Setting:", 1)[1]  # the table's card names its ladders' commits
    assert drift_markdown(tmp_path) == ""  # no drift folder beside the summaries: no section


@pytest.mark.parametrize("executor", PROFILES)
def test_the_committed_intervals_recompute_from_the_committed_episodes(executor):
    """Every paired interval of a committed comparison (against no supervision, against the best fixed rule, and
    the focus row against every other, the oracle's headroom included), recomputed here with the harness's bootstrap
    from the summary's episode file alone."""
    from dataclasses import asdict

    from benchmarks.harness.results_summary import against
    from benchmarks.harness.stats import HierarchicalBootstrap
    from benchmarks.harness.summary_rows import StoredProfile

    stored = StoredProfile.read(SUMMARY_ROOT, executor)
    summary, plan = stored.summary, stored.summary["plan"]
    runs = stored.runs()
    assert len(stored.episodes) == summary["episodes"]["count"]
    assert all(r.runs[label] for r in runs.values() for label in r.runs), "a row's label has no stored episode"
    boot = HierarchicalBootstrap(list(runs.values()), summary["benchmarks"])
    vs_none, vs_rule = against(list(runs), boot, plan["reference"], plan.get("bar", ""))
    assert vs_none == summary["vs_none"] and vs_rule == summary["vs_rule"]
    focus = {p["a"] for p in summary["pairwise"]}
    assert len(focus) == 1 and "oracle" in {p["b"] for p in summary["pairwise"]}
    (a,) = focus
    assert [{"a": a, "b": b, **asdict(boot.gain(a, b)[1])} for b in runs if b != a] == summary["pairwise"]
