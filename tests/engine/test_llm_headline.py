"""The headline LLM comparison end to end on a tiny model: three rows, the LLM rows through a real vLLM server (the
trained row's LoRA adapter served beside the base), resumable, and the page rebuilt from the run folder."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.engine]


def test_llm_headline_quick_runs_resumes_and_builds_its_page(engine_model_dir, tmp_path):
    from benchmarks.llm_headline import REPORT_FILE, TIMINGS_FILE, main

    out = tmp_path / "run"
    summary = tmp_path / "summary"
    argv = ["--out", str(out), "--model", str(engine_model_dir), "--quick", "--summary", str(summary)]
    assert main(argv) == 0
    report = json.loads((out / REPORT_FILE).read_text())
    assert report["complete"] and not report["pending"]
    assert list(report["rows"]) == ["no_supervision", "zero_shot", "trained"]
    episodes = {key: row["episodes"] for key, row in report["rows"].items()}
    assert set(episodes.values()) == {2} and all(row["failed"] == 0 for row in report["rows"].values())
    assert "openai:base@" in report["rows"]["zero_shot"]["label"]
    assert "openai:steerer@" in report["rows"]["trained"]["label"]  # the trained adapter, by its served name
    assert (out / "train" / "adapter" / "adapter_config.json").is_file()
    decisions = list((out / "test" / "checkpoints").glob("*/decisions.jsonl"))
    assert len(decisions) == 2 and all(path.read_text().strip() for path in decisions)
    assert "trained vs zero-shot" in report["comparisons"]
    timings = json.loads((out / TIMINGS_FILE).read_text())
    assert {"train", "serve (vLLM start-up)", "dev: zero_shot", "dev: trained", "test: trained"} <= set(timings)

    # a second invocation finds every part finished: nothing reruns, no server starts
    assert main(argv) == 0
    assert json.loads((out / TIMINGS_FILE).read_text()) == timings
    again = json.loads((out / REPORT_FILE).read_text())
    assert again["rows"]["trained"]["f1"] == report["rows"]["trained"]["f1"]

    doc = tmp_path / "page.md"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "steer_envs.cli.main",
            "report",
            "results_llm_headline",
            "--out",
            str(out),
            "--doc",
            str(doc),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = doc.read_text()
    assert "| no supervision |" in page and "LoRA adapter, served" in page and "Setting card" in page
    assert "Partial" not in page
    assert json.loads((summary / REPORT_FILE).read_text()) == again  # the compact copy the repository keeps
    # with every test episode of its rows (the evidence of its intervals) and the code behind them
    from benchmarks.harness.results_summary import EPISODES_FILE, read_episodes

    lines = read_episodes(summary / EPISODES_FILE)
    assert {line["row"] for line in lines} == set(again["rows"]) and len(lines) == 2 * len(again["rows"])
    assert again["code"]["commits"] and "benchmarks/llm_headline.py" in again["code"]["files"]
