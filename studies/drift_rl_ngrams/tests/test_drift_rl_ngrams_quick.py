"""studies/drift_rl_ngrams: the frozen trainer keeps the n-gram table at its initialisation and trains the rest, the
dev choice is written before any test episode by the stated rule, and the study runs end to end (a tiny run)."""

from __future__ import annotations

import gzip
import json

import pytest
import torch

from agents.steering.backbones import build_steerer
from agents.steering.trainer import load_model
from studies.drift_rl_ngrams.run import CHOICE, GAINS, RULE, TRAINERS, main


@pytest.mark.slow
def test_the_study_runs_end_to_end_and_freezes_only_the_n_gram_table(tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["--quick", "--out", str(out), "--summary", str(tmp_path), "--no-progress"]) == 0
    for checkpoint in (out / "checkpoints").iterdir():
        steerer, payload = load_model(checkpoint / "model.pt")
        initial = build_steerer(payload["kind"], steerer.options, payload["spec"])
        frozen = checkpoint.name.startswith("steering_rl_frozen_ngrams")
        assert torch.equal(steerer.bag.weight, initial.bag.weight) is frozen, checkpoint.name
        assert not torch.equal(steerer.option_head.weight, initial.option_head.weight), checkpoint.name
    summary = json.loads((tmp_path / "summary.json").read_text())
    choice = json.loads((out / CHOICE).read_text())
    assert summary["choice"] == choice and choice["rule"] == RULE
    expected = "rl_frozen_ngrams" if choice["dev_gain"]["low"] > 0 else "rl_paper"
    assert choice["chosen"] == expected
    first_test_episode = min(p.stat().st_mtime for p in (out / "test").rglob("*.jsonl"))
    assert (out / CHOICE).stat().st_mtime <= first_test_episode  # the choice came before the test run
    assert set(summary["gains"]) == {f"{a} - {b}" for a, b in GAINS}
    for gain in summary["gains"].values():
        verdict = "reproduces" if gain["low"] > 0 else "opposite" if gain["high"] < 0 else "not shown"
        assert gain["low"] <= gain["mean"] <= gain["high"] and gain["verdict"] == verdict
    for row in TRAINERS:
        assert summary["rows"][row]["runs"] == 2
        assert {run["seed"] for run in summary["dev"]["runs"][row]} == {0, 1}
    assert "studies/drift_rl_ngrams/run.py" in summary["code"]["files"]
    with gzip.open(tmp_path / "episodes.jsonl.gz", "rt") as fh:
        assert len([json.loads(line) for line in fh]) == (3 + 2 * len(TRAINERS)) * 7
    assert "dev choice:" in capsys.readouterr().out

    # the paper's setting's steerers copied from another run's checkpoints: the same training, the same rows
    again = tmp_path / "again"
    argv = ["--quick", "--out", str(again / "runs"), "--summary", str(again), "--no-progress"]
    assert main([*argv, "--paper-checkpoints", str(out / "checkpoints")]) == 0
    copied = json.loads((again / "summary.json").read_text())
    assert all(run.get("checkpoint") for run in copied["dev"]["runs"]["rl_paper"])
    assert not any(run.get("checkpoint") for run in copied["dev"]["runs"]["rl_frozen_ngrams"])
    assert copied["rows"] == summary["rows"] and copied["gains"] == summary["gains"]
