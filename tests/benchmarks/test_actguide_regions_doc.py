"""benchmarks/harness/actguide_regions_doc.py: the by-region page's whole pipeline, run for real at the quick
plan's size (tiny trainings, regions, evaluations, the dev grid and its choice, diagnostics, alignment, ablations),
then resumed without training, rebuilt by ``steer-envs report``, and refused on a run folder of another setting."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchmarks.actguide_regions import success
from benchmarks.harness.actguide_regions_doc import RegionsPlan, check_trained_as, main
from benchmarks.pages import get_page
from benchmarks.pages.actguide_regions import STEP2_METHODS, cell_name, read_records
from steer_envs.cli.main import main as cli
from steer_envs.errors import SteerEnvsError


def test_both_region_pages_are_registered():
    assert get_page("results_actguide_regions").doc == "docs/results_actguide_regions.md"
    assert get_page("results_actguide_regions_train").doc == "docs/results_actguide_regions_train.md"


def test_the_quick_plan_keeps_the_documented_grid_rule():
    plan = RegionsPlan(out=Path("x")).make_quick()
    assert plan.grid and all(cell in STEP2_METHODS[0].cells for cell in plan.grid)
    assert plan.pool_setting["pool_keep"] == "barrier,in_region"


@pytest.mark.slow
def test_pipeline_runs_resumes_and_rebuilds(tmp_path, capsys):
    out, doc, train_doc = tmp_path / "runs", tmp_path / "page.md", tmp_path / "train.md"
    argv = ["--quick", "--out", str(out), "--doc", str(doc), "--train-doc", str(train_doc), "--jobs", "2"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "$ steer-envs train actguide" in first
    text = doc.read_text()
    for heading in ("## Trained on the whole RL pool", "## Trained where the barrier is", "## Ablations and noise at the "
                    "documented setting", "## Step 2", "**Dev grid**", "**Test, the chosen pair", "M_0",
                    "**Did the hinted actions reach π_u?**", "**Ablations and noise at the step 2 setting**"):
        assert heading in text, heading
    assert "the acceptance point (barrier above 0, in-region not below 0) is **" in text
    assert "| barrier |" in train_doc.read_text()

    # the dev choice is the grid cell with the highest barrier + in-region success (recomputed from the logs)
    record = json.loads((out / "regions_page.json").read_text())
    from agents.actguide.regions import read_regions

    regions = read_regions(out / "regions_dev" / "regions.json")
    groups = {g: {t for t, r in regions.items() if r == g} for g in ("barrier", "in_region")}
    for method in STEP2_METHODS[:2]:
        scores = {}
        for epochs, lr in RegionsPlan(out).make_quick().grid:
            log = out / "step2" / "grid" / cell_name(method.name, epochs, lr) / "episodes_regions_dev" / f"{method.variant}.jsonl"
            records = read_records(log, set(regions), 1, 2)
            scores[(epochs, lr)] = sum(success(records, groups[g]) for g in groups if groups[g])
        best = max(scores.values())
        assert scores[tuple(record["choices"][method.name])] == best

    # the diagnostics remember which models they read: a changed dev choice recomputes them instead of reusing
    inputs = json.loads((out / "step2" / "barrier_test" / "barrier.json.inputs.json").read_text())
    assert set(inputs) == {"base", "zero_rl", "actguide"} and all(os.path.isdir(p) for p in inputs.values())

    # a rerun trains nothing and evaluates nothing new; the page is rebuilt from the folders alone
    times = (out / "train_times.json").read_text()
    assert main(argv) == 0
    assert "$ steer-envs train" not in capsys.readouterr().out
    assert (out / "train_times.json").read_text() == times
    rebuilt = tmp_path / "rebuilt.md"
    assert cli(["report", "results_actguide_regions", "--out", str(out), "--doc", str(rebuilt)]) == 0
    strip = lambda page: [line for line in page.splitlines() if "min of pipeline wall time" not in line]  # noqa: E731
    assert strip(rebuilt.read_text()) == strip(doc.read_text())

    # a finished run of another setting is refused, not silently reused under this one's name
    setting = json.loads((out / "setting.json").read_text())
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**setting, "lr": 0.5}))
    with pytest.raises(SteerEnvsError, match=r"trained with another setting.*lr 0\.003 != 0\.5"):
        check_trained_as(out / "runs" / "zero_rl" / "seed0", other, "zero_rl", 0)
    check_trained_as(out / "runs" / "zero_rl" / "seed0", out / "setting.json", "zero_rl", 0)  # its own: accepted
