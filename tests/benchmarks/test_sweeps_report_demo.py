"""τ sweep, transfer sweep, report (markdown + PNG) and the demo's quick mode, on real envs."""
from __future__ import annotations

import json

import pytest

from benchmarks.harness.config import EvalConfig
from benchmarks.harness.report import write_report
from benchmarks.harness.sweeps import tau_sweep, transfer_sweep
from steer_envs.cli.main import main

TINY = "steering_rl:G=2,N=2,bank_tasks=12,k=4,m=2"
PNG = b"\x89PNG\r\n\x1a\n"


def _cfg():
    return EvalConfig(benchmarks=("nq", "musique"), split="dev", limit=3, seeds=1)


@pytest.mark.slow
def test_tau_sweep_trains_once_and_orders_interventions(tmp_path):
    text = tau_sweep(tmp_path / "tau", _cfg(), TINY, [0.05, 0.5, 0.95], progress=False)
    assert text.count("| τ = ") == 3
    assert len(list((tmp_path / "tau" / "checkpoints").iterdir())) == 1   # τ is a deployment knob
    rows = json.loads((tmp_path / "tau" / "metrics.json").read_text())["methods"]
    rate = {r["method"].rsplit("tau=", 1)[-1]: r["interventions_per_task"] for r in rows if "tau=" in r["method"]}
    assert rate["0.05"] >= rate["0.5"] >= rate["0.95"]   # a lower threshold intervenes more often
    assert rate["0.05"] > rate["0.95"]
    report = write_report(tmp_path / "tau")
    text = report.read_text()
    assert "## τ sweep" in text and "![τ sweep" in text
    for png in (tmp_path / "tau" / "plots").glob("*.png"):
        assert png.read_bytes()[:8] == PNG
    assert any(p.name.startswith("tau_") for p in (tmp_path / "tau" / "plots").iterdir())
    assert any(p.name.startswith("training_") for p in (tmp_path / "tau" / "plots").iterdir())


@pytest.mark.slow
def test_transfer_trains_on_one_executor_and_evaluates_on_others(tmp_path):
    text = transfer_sweep(tmp_path / "tr", _cfg(), [TINY], "sim:default", ["sim:default", "sim:weak"], progress=False)
    assert "`sim:default` (train)" in text and "`sim:weak`" in text
    assert not (tmp_path / "tr" / "sim_weak" / "checkpoints").exists()   # no retraining on the target
    methods = json.loads((tmp_path / "tr" / "sim_weak" / "methods.json").read_text())
    assert methods[TINY]["trained_on"] == "sim:default"
    report = write_report(tmp_path / "tr")
    assert (tmp_path / "tr" / "plots" / "transfer.png").read_bytes()[:8] == PNG
    assert "Transfer: trained on `sim:default`" in report.read_text()


@pytest.mark.slow
def test_demo_quick_runs_end_to_end_and_resumes(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert printed.index("preparing: loading the corpus and the BM25 index") < printed.index("[1/")  # before any bar
    for method in ("no_supervision", "steering_rl", "random:match=steering_rl", "always", "drift_rule",
                   "steering_zero_shot", "planning_zero_shot", "planning_rl", "verification_zero_shot",
                   "verification_rl", "filtered_bc", "sb3_ppo"):
        assert f"| {method}" in printed, method
    assert "## τ sweep" in printed
    assert (out / "report.md").is_file() and (out / "plots" / "methods.png").read_bytes()[:8] == PNG
    assert main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0   # resumes: nothing to redo
    assert capsys.readouterr().out.count(" 0 episodes run") == 14


def test_report_on_a_folder_that_is_not_a_run_says_so(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_results_page_commands_are_valid_cli_commands_covering_every_method(tmp_path):
    from baselines.registry import known_methods
    from benchmarks.harness.results_doc import plan
    from steer_envs.cli.main import build_parser

    steps = plan(tmp_path, limit=0, seeds=3, llm_limit=1, llm_executor_limit=1)
    parser = build_parser()
    for step in steps.values():
        parser.parse_args(step.argv)                  # every shown command parses as the CLI would
        assert step.command.startswith("steer-envs ") and "--out" in step.argv
    main_args = parser.parse_args(steps["main"].argv)
    assert main_args.split == "test" and main_args.seeds == 3 and main_args.limit == 0
    covered = {m.split(":")[0] for m in main_args.method} | {"steering_llm_zero_shot"}
    assert covered == {m.name for m in known_methods()}   # the page covers every registered method
    assert parser.parse_args(steps["tau"].argv).out == main_args.out   # τ reuses the main run's training


def test_demo_prepares_the_index_with_a_message_before_any_progress_bar(capsys, shared_data_dir):
    from benchmarks.harness.demo import prepare_search

    prepare_search()
    out = capsys.readouterr().out
    assert out.startswith("preparing: loading the corpus and the BM25 index") and "index " in out
