"""sim:default against the real Search-R1 (base) rollouts, within the stated tolerance; the calibrate command."""

from __future__ import annotations

import json

import pytest

from steer_envs.cli.main import main
from steer_envs.executors.sim.calibration import TOLERANCE, calibrate, transcript_stats


def test_transcript_stats_reads_both_sides_the_same_way():
    invalid = (
        "My previous action is invalid. If I want to search, I should put the query between <search> and </search>. "
        "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again."
    )
    rows = [
        ("<search> a </search><information>x</information><search> A </search><answer> Paris </answer>", ["Paris"]),
        ("<think> hmm </think>" + invalid, ["Rome"]),
    ]
    stats = transcript_stats(rows)
    assert (stats.n, stats.searches, stats.repeated, stats.no_answer, stats.f1) == (2, 1.0, 0.5, 0.5, 50.0)


@pytest.mark.slow
def test_sim_default_is_calibrated_to_search_r1_base():
    rows = calibrate("sim:default", "search_r1_base", limit=None)
    assert {r.benchmark for r in rows} == {"nq", "triviaqa", "popqa", "bamboogle"}
    for row in rows:
        assert row.within(TOLERANCE), (row.benchmark, row.gaps())
    # a deliberately different profile is not within tolerance everywhere (the check can fail)
    assert not all(r.within(TOLERANCE) for r in calibrate("sim:loopy", "search_r1_base", limit=150))


def test_calibrate_command_prints_the_table(capsys, tmp_path):
    report = tmp_path / "calibration.json"
    code = main(["calibrate", "--profile", "sim:default", "--limit", "20", "--json", str(report)])
    out = capsys.readouterr().out
    assert "| benchmark | n | searches/task real / sim" in out
    for bench in ("nq", "triviaqa", "popqa", "bamboogle"):
        assert f"| {bench} |" in out
    rows = json.loads(report.read_text())["rows"]
    assert sorted(r["benchmark"] for r in rows) == ["bamboogle", "nq", "popqa", "triviaqa"]
    # the exit status says whether every benchmark is within the tolerance: 0 if all are, else 1
    assert code == (0 if all(r["within"] for r in rows) else 1), [(r["benchmark"], r["within"]) for r in rows]


def test_calibrate_command_bad_profile(capsys):
    assert main(["calibrate", "--profile", "hf:gpt2"]) == 2
    assert "--profile must be a simulator spec" in capsys.readouterr().err
