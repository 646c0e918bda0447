"""benchmarks/harness/actguide_schedule_doc.py: the schedule page's whole pipeline at the quick plan's size (base,
regions, step 2 cells, the dev choice of a share, test, diagnostics, ablations), with trainings two at a time and
one at a time, then resumed without training and rebuilt by ``steer-envs report``."""
from __future__ import annotations

import json

import pytest

from benchmarks.actguide_regions import success
from benchmarks.harness.actguide_schedule_doc import main
from benchmarks.pages import get_page
from benchmarks.pages.actguide_regions import read_records
from benchmarks.pages.actguide_schedule import candidate_folder
from steer_envs.cli.main import main as cli


def test_the_schedule_page_is_registered():
    assert get_page("results_actguide_schedule").doc == "docs/results_actguide_schedule.md"


@pytest.mark.slow
def test_schedule_pipeline_runs_in_parallel_resumes_and_rebuilds(tmp_path, capsys):
    out, doc = tmp_path / "runs", tmp_path / "page.md"
    argv = ["--quick", "--out", str(out), "--doc", str(doc), "--jobs", "2"]
    assert main(argv) == 0
    assert "$ steer-envs train actguide" in capsys.readouterr().out
    text = doc.read_text()
    for heading in ("## The three-way split", "## Dev: the candidates", "## Test: the chosen candidate",
                    "**Barrier diagnostics before and after", "M_0", "## The same models on the RL pool's own train tasks",
                    "## Ablations and noise at the chosen candidate"):
        assert heading in text, heading
    assert "the acceptance point (barrier above 0, in-region not below 0) is **" in text

    # the choice is the candidate with the highest barrier + in-region dev success, recomputed from the episodes
    from agents.actguide.regions import read_regions

    regions = read_regions(out / "regions_dev" / "regions.json")
    groups = {g: {t for t, r in regions.items() if r == g} for g in ("barrier", "in_region")}
    record = json.loads((out / "schedule_page.json").read_text())
    cell = out / "step2" / "grid" / "actguide_e{}_lr{:g}".format(*record["step2_choices"]["actguide"])
    scores = {}
    for name in record["plan"]["candidates"]:
        folder = candidate_folder(out, name, cell)
        records = read_records(folder / "episodes_regions_dev" / "actguide.jsonl", set(regions), 1, 2)
        scores[name] = sum(success(records, groups[g]) for g in groups if groups[g])
    assert scores[record["chosen"]] == max(scores.values())
    guided = [json.loads(line) for line in (candidate_folder(out, "until0.5", cell) / "runs" / "actguide" / "seed0"
                                            / "log.jsonl").open()]
    assert not all(row["guidance_on"] for row in guided)  # the share's run stopped guiding

    # a rerun trains nothing; the page is rebuilt from the folders alone
    times = (out / "train_times.json").read_text()
    assert main(argv) == 0
    assert "$ steer-envs train" not in capsys.readouterr().out
    assert (out / "train_times.json").read_text() == times
    rebuilt = tmp_path / "rebuilt.md"
    assert cli(["report", "results_actguide_schedule", "--out", str(out), "--doc", str(rebuilt)]) == 0
    strip = lambda page: [line for line in page.splitlines() if "min of pipeline wall time" not in line]  # noqa: E731
    assert strip(rebuilt.read_text()) == strip(doc.read_text())

    # one at a time gives the same runs: the same dev scores and choice
    serial = tmp_path / "serial"
    assert main(["--quick", "--out", str(serial), "--doc", str(tmp_path / "serial.md"), "--jobs", "1"]) == 0
    assert json.loads((serial / "step3" / "choice.json").read_text()) == json.loads((out / "step3" / "choice.json").read_text())
