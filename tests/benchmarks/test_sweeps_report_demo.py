"""τ sweep, transfer sweep, report (markdown + PNG) and the demo's quick mode, on real envs."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.config import EvalConfig
from benchmarks.harness.report import write_report
from benchmarks.harness.sweeps import tau_sweep, transfer_sweep
from steer_envs.cli.main import main
from tests.benchmarks.support import TINY, results_doc_argv, summaries_of

PNG = b"\x89PNG\r\n\x1a\n"


def _cfg():
    return EvalConfig(benchmarks=("nq", "musique"), split="dev", limit=3, seeds=1)


@pytest.mark.slow
def test_tau_sweep_trains_once_and_orders_interventions(tmp_path):
    text = tau_sweep(tmp_path / "tau", _cfg(), TINY, [0.05, 0.5, 0.95], progress=False)
    assert text.count("| τ = ") == 3
    assert len(list((tmp_path / "tau" / "checkpoints").iterdir())) == 1  # τ is a deployment knob
    rows = json.loads((tmp_path / "tau" / "metrics.json").read_text())["methods"]
    rate = {r["method"].rsplit("tau=", 1)[-1]: r["interventions_per_task"] for r in rows if "tau=" in r["method"]}
    assert rate["0.05"] >= rate["0.5"] >= rate["0.95"]  # a lower threshold intervenes more often
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
    assert not (tmp_path / "tr" / "sim_weak" / "checkpoints").exists()  # no retraining on the target
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
    assert printed.index("preparing: loading the corpus and the BM25 index") < printed.index("[dev]")  # before any bar
    for row in (
        "No supervision",
        "Random (p chosen on dev)",
        "Best fixed rule",
        "Untrained steerer",
        "Filtered BC (RL's budget)",
        "SB3 PPO (RL's budget)",
        "RL steering",
    ):
        assert f"| {row}" in printed or f"| **★ {row}" in printed, row
    assert "*How to read this table.*" in printed
    (verdict,) = [line for line in printed.splitlines() if line.startswith("**Verdict:**")]
    assert "Best fixed rule (chosen on dev) (" in verdict  # the focus row against the protocol's bar
    assert sum(line.startswith("| **★") for line in printed.splitlines()) == 1 and "*Setting: corpus" in printed
    assert (out / "comparison.md").is_file() and (out / "plots" / "rate_curves.png").read_bytes()[:8] == PNG
    choices = json.loads((out / "dev" / "choices.json").read_text())
    assert {c["split"] for c in choices.values()} == {"dev"} and len(
        choices
    ) == 5  # RL, untrained, random, BC τ, PPO cost
    test_runs = [json.loads(line) for line in (out / "test" / "runs.jsonl").read_text().splitlines()]
    assert {r["split"] for r in test_runs} == {"test"}
    assert main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0  # resumes: nothing to redo
    assert "[dev]" not in capsys.readouterr().out
    assert [json.loads(line) for line in (out / "test" / "runs.jsonl").read_text().splitlines()] == test_runs


def test_report_on_a_folder_that_is_not_a_run_says_so(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


@pytest.mark.slow
def test_results_page_regenerates_with_a_setting_card_on_every_table(tmp_path):
    from benchmarks.harness.results_doc import main as results_main
    from steer_envs.llm.tiny import build_tiny_causal_lm

    tiny = build_tiny_causal_lm(tmp_path / "lm")
    doc = tmp_path / "results.md"
    argv = results_doc_argv(
        tmp_path / "runs",
        doc,
        *("--knob-grid", "sb3_ppo=0", "--llm-dev-limit", "1", "--llm-probes", "2", "--llm-model", f"hf:{tiny}"),
        train_seeds=2,
        max_probes=3,
        llm_limit=1,
    )
    assert results_main(argv) == 0
    text = doc.read_text()
    assert text.startswith("# Results\n\n> **Dry run**")
    tables = text.count("| Method |")
    # main, curves, paired against none and the best fixed rule, LLM; + Spearman
    assert tables == 4 and text.count("*Setting: corpus") == tables + 1
    assert "split **test**" in text and "**Avg F1 is the macro mean over benchmarks**" in text
    assert text.count("**Verdict:**") == 2 and "Zero-shot LLM steerer" in text
    summaries = summaries_of(tmp_path / "runs")
    assert (summaries / "llm" / "summary.json").is_file()
    assert (summaries / "sim_default" / "rate_curves.png").read_bytes()[:8] == PNG
    assert "](summaries/sim_default/rate_curves.png)" in text
    before = (tmp_path / "runs" / "sim_default" / "test" / "runs.jsonl").read_text()
    assert results_main(argv) == 0  # resumes: reads everything back, runs no episode again
    assert (tmp_path / "runs" / "sim_default" / "test" / "runs.jsonl").read_text() == before


def test_demo_prepares_the_index_with_a_message_before_any_progress_bar(capsys, shared_data_dir):
    from benchmarks.harness.demo import prepare_search

    prepare_search()
    out = capsys.readouterr().out
    assert out.startswith("preparing: loading the corpus and the BM25 index") and "index " in out


def test_a_task_subset_at_full_seeds_is_a_subset_and_fewer_seeds_a_dry_run():
    import argparse

    from benchmarks.harness.results_doc import is_dry_run, is_subset

    full = dict(limit=0, seeds=3, train_seeds=3, split="test", llm_limit=0)
    assert not is_dry_run(argparse.Namespace(**full)) and not is_subset(argparse.Namespace(**full))
    subset = argparse.Namespace(**{**full, "limit": 40})
    assert is_subset(subset) and not is_dry_run(subset)
    for change in ({"seeds": 1}, {"train_seeds": 2}, {"split": "dev"}, {"llm_limit": 5}):
        assert is_dry_run(argparse.Namespace(**{**full, **change}))
