"""docs/results_testbed.md section 7 is rendered from committed ladder folders (``docs/results/testbed/<profile>/``,
what ``steer-envs headroom`` wrote plus its run.json), the same way the drift page renders its levels."""

from __future__ import annotations

import json
import shutil

from benchmarks.pages.ladders import headroom_overview, interval
from benchmarks.pages.testbed import ladders_markdown, read_ladders
from steer_envs.paths import REPO_ROOT

DRIFT3 = REPO_ROOT / "docs" / "results" / "drift" / "drift3"


def test_section_seven_shows_every_committed_profile_side_by_side_and_names_the_missing_ones(tmp_path):
    shutil.copytree(DRIFT3, tmp_path / "loopy")  # any committed ladder folder has the shape
    ladders = read_ladders(tmp_path)
    assert list(ladders) == ["sim:loopy"]
    text = ladders_markdown(ladders)
    ladder = json.loads((DRIFT3 / "ladder.json").read_text(encoding="utf-8"))
    rows = {r["rung"]: r for r in ladder["rows"]}
    overview = headroom_overview(ladders)
    assert f"| `sim:loopy` | {rows['none']['f1']:.1f} | {interval(rows['best_fixed_rule']['gain'])} |" in overview
    assert interval(rows["learnable_ceiling"]["vs_best_fixed_rule"]) in overview
    assert "Not measured at this scale yet: `sim:default`, `sim:r1searcher`" in text
    run = json.loads((DRIFT3 / "run.json").read_text(encoding="utf-8"))
    assert run["command"] in text and "Dev choices: best fixed rule `" in text
    assert "### `sim:loopy`" in text and "What limits these numbers" in text


def test_without_a_committed_ladder_the_section_says_so(tmp_path):
    assert read_ladders(tmp_path) == {}
    assert "No ladder is committed" in ladders_markdown({})


def test_the_committed_page_shows_the_committed_ladders():
    """Section 7 of the committed page is the render of the committed ladders (``python -m benchmarks.pages.testbed
    --ladders`` refreshes it), and refreshing a page keeps every other section as it is."""
    from benchmarks.pages.testbed import refresh_ladders

    page = (REPO_ROOT / "docs" / "results_testbed.md").read_text(encoding="utf-8")
    assert refresh_ladders(page, ladders_markdown(read_ladders())) == page
    refreshed = refresh_ladders(page, "## 7. The headroom ladder of every profile (test)\n\nnew\n\n")
    assert refreshed.split("## 7.")[0] == page.split("## 7.")[0] and "new\n\n## What is weak here" in refreshed


def test_every_committed_ladder_with_episodes_recomputes_from_them():
    """A committed ladder summary with its test episodes (``benchmarks.harness.ladder_summary``): every rung's paired
    intervals, its F1 (macro over benchmarks), interventions and executor turns per task, recomputed from the
    committed episodes alone, equal the committed ladder's (the README quotes them)."""
    from collections import defaultdict

    from benchmarks.harness.ladder_summary import rows_from_summary
    from benchmarks.harness.results_summary import EPISODES_FILE, read_episodes
    from benchmarks.harness.stats import macro_mean
    from benchmarks.harness.summary_rows import stored_record

    folders = [p.parent for p in sorted((REPO_ROOT / "docs" / "results").glob(f"*/*/{EPISODES_FILE}"))]
    ladders = [f for f in folders if (f / "ladder.json").is_file()]
    assert REPO_ROOT / "docs" / "results" / "testbed" / "default" in ladders
    for folder in ladders:
        ladder = json.loads((folder / "ladder.json").read_text(encoding="utf-8"))
        recomputed = rows_from_summary(folder)
        by_rung = defaultdict(list)
        for line in read_episodes(folder / EPISODES_FILE):
            by_rung[line["rung"]].append(stored_record(line, method=line["rung"]))
        for row in ladder["rows"]:
            stored = {k: row[k] for k in ("gain", "vs_best_fixed_rule") if k in row}
            assert stored == recomputed[row["rung"]], f"{folder.name}: {row['rung']}"
            records = by_rung[row["rung"]]
            f1 = 100 * macro_mean(records, ladder["config"]["benchmarks"])
            assert round(f1, 3) == row["f1"], f"{folder.name}: {row['rung']} F1"
            for key, field in (("interventions_per_task", "interventions"), ("turns_per_task", "executor_turns")):
                mean = sum(getattr(r, field) for r in records) / len(records)
                assert round(mean, 4) == row[key], f"{folder.name}: {row['rung']} {key}"
