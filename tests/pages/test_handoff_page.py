"""docs/results_handoff.md: the generator writes its page with the page builder, and the builder rebuilds it from the
run folder alone, from a small run folder made here (every hand-off row, one task per benchmark, one seed, one
training seed)."""

from __future__ import annotations

import json

import pytest

from benchmarks.pages import get_page
from benchmarks.pages.tables import table_lines
from steer_envs.errors import SteerEnvsError

TINY_RL = "m=1,k=4,G=2,N=1,bank_tasks=3,dev_tasks=1"
SMALL = {"handoff_zero_shot": "dev_tasks=1", "handoff_best_fixed_rule": "dev_tasks=1,seeds=1,max_at=1"}


@pytest.mark.slow
def test_handoff_page_is_rebuilt_from_its_run_folder(tmp_path):
    from benchmarks.handoff_results import run

    out = tmp_path / "runs"
    report = run(
        out,
        split="dev",
        limit=1,
        seeds=1,
        train_seeds=(0,),
        max_turns=12,
        train_options=TINY_RL,
        benchmarks=("nq", "hotpotqa"),
        method_options=SMALL,
        summary=tmp_path / "summary",
    )
    stored = json.loads((out / "results_handoff.json").read_text(encoding="utf-8"))
    assert stored["rows"] == json.loads(json.dumps(report["rows"]))
    card = stored["card"]  # the harness's setting card, with the pipeline's profile hash
    assert card["split"] == "dev" and card["tasks"] == {"nq": 1, "hotpotqa": 1} and card["commits"]
    assert card["executor_hash"].startswith("default.json sha256:")
    new = get_page("results_handoff").build(out, tmp_path / "results_handoff.md").read_text(encoding="utf-8")
    assert len(table_lines(new)) == 2 + 2 + 2 + 11 + 2 + 3  # calibration (2 benchmarks), 11 rows, 3 comparisons
    assert "| RL steering, every hand-off, slow path may pass |" in new
    assert "| RL steering, every hand-off, slow path may pass, its pass reads the fast path's z |" in new
    assert new == (out / "results_handoff.md").read_text(encoding="utf-8")  # the generator wrote it with the builder
    # the compact summary: every interval recomputed from its episodes alone equals the run's
    from benchmarks.handoff_results import table_from_summary

    rows, comparisons = table_from_summary(tmp_path / "summary")
    assert rows == json.loads(json.dumps(report["rows"])) and comparisons == report["comparisons"]
    assert get_page("results_handoff").build(tmp_path / "summary", tmp_path / "from_summary.md").read_text() == new


@pytest.mark.slow
def test_a_confirmation_runs_the_named_rows_on_tasks_the_table_never_used(tmp_path, capsys):
    """``--skip N --rows ...``: no supervision and the named rows only, on the tasks after the first N, against no
    supervision; written to results_handoff_confirm.json, no page."""
    from benchmarks.handoff_results import CONFIRM_FILE, main
    from benchmarks.harness.runfolder import RunFolder

    out = tmp_path / "confirm"
    row = "the same, its pass bias chosen on dev (no retraining)"
    # one tiny confirmation's arguments, the run folder and the tasks to pass over left out
    tiny = [
        "--split",
        "dev",
        "--limit",
        "1",
        "--seeds",
        "1",
        "--train-seeds",
        "0",
        "--max-turns",
        "12",
        "--benchmarks",
        "nq",
        "hotpotqa",
        "--rows",
        row,
        "--train-options",
        TINY_RL,
    ]
    code = main(["--out", str(out), "--skip", "1", *tiny])
    assert code == 0
    report = json.loads((out / CONFIRM_FILE).read_text(encoding="utf-8"))
    assert list(report["rows"]) == ["no supervision", row] and report["skip"] == 1
    assert set(report["rows"][row]["gain"]) >= {"mean", "low", "high"}
    assert report["card"]["tasks"] == {"nq": 1, "hotpotqa": 1}
    folder = RunFolder(out)
    skipped = {t.id for t in folder.config.tasks()}
    from benchmarks.harness.config import EvalConfig

    first = {t.id for t in EvalConfig(benchmarks=("nq", "hotpotqa"), split="dev", limit=1).tasks()}
    assert skipped and not skipped & first  # the confirmation's tasks are not the first ones
    assert not (out / "results_handoff.md").exists()
    assert f"| {row} |" in capsys.readouterr().out
    # a second confirmation on other tasks deploys the first one's steerer (--checkpoints): nothing is trained again,
    # the dev bias is read back, and the new folder keeps no checkpoints of its own
    from benchmarks.harness.budget import Budget

    (trained,) = [d for d in (out / "checkpoints").iterdir() if d.name.startswith("handoff_rl")]
    chosen = (trained / "pass_bias_for_f1.json").read_text(encoding="utf-8")
    again = tmp_path / "confirm_again"
    assert main(["--out", str(again), "--checkpoints", str(out / "checkpoints"), "--skip", "2", *tiny]) == 0
    assert len(Budget.read(trained).builds) == 1 and Budget.read(trained).env_steps > 0
    assert (trained / "pass_bias_for_f1.json").read_text(encoding="utf-8") == chosen
    assert not (again / "checkpoints").exists()
    assert json.loads((again / CONFIRM_FILE).read_text(encoding="utf-8"))["skip"] == 2
    with pytest.raises(SteerEnvsError, match="unknown hand-off row"):
        main(["--out", str(out), "--split", "dev", "--limit", "1", "--skip", "1", "--rows", "no such row"])


def test_the_committed_handoff_table_recomputes_from_its_committed_episodes(tmp_path):
    """Every row and paired interval of the committed hand-off table, recomputed with the harness's bootstrap from the
    committed episodes alone; the committed page is the builder's render of that summary."""
    from benchmarks.handoff_results import table_from_summary
    from benchmarks.pages.handoff import REPORT_FILE
    from steer_envs.paths import REPO_ROOT

    folder = REPO_ROOT / "docs" / "results" / "handoff"
    report = json.loads((folder / REPORT_FILE).read_text(encoding="utf-8"))
    rows, comparisons = table_from_summary(folder)
    assert json.loads(json.dumps(rows)) == report["rows"]
    assert json.loads(json.dumps(comparisons)) == report["comparisons"]
    page = get_page("results_handoff").build(folder, tmp_path / "results_handoff.md").read_text(encoding="utf-8")
    assert page == (REPO_ROOT / "docs" / "results_handoff.md").read_text(encoding="utf-8")
