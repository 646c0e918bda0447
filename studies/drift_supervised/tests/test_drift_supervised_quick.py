"""studies/drift_supervised: the gains are the ladder's protocol, the two fits differ only in the n-gram table, and
the study runs end to end (a tiny run), its intervals and verdicts from the harness's one rule."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch

from agents.steering.backbones import build_steerer
from agents.steering.interventions import options_from_catalogue
from studies.drift_supervised.run import (
    FITS,
    GAINS,
    LEARNING_RATES,
    ROWS,
    GainData,
    StudySetting,
    fit,
    main,
    make_env,
    measure_episodes,
)


@pytest.fixture(scope="module")
def tiny():
    """Three train episodes' decisions, every action forked twice, and the catalogue's options."""
    env = make_env("train", 10)
    options = options_from_catalogue(env.unwrapped.catalogue)
    env.close()
    from benchmarks.harness.config import EvalConfig
    from steer_envs.episodes import episode_seed

    tasks = EvalConfig(executor="sim:drift1", split="train", seeds=1, limit=1).tasks()[:3]
    rows = measure_episodes([(t.id, episode_seed(t.id, 0), 2, 10) for t in tasks])
    data = GainData([o for o, _, _ in rows], np.stack([v for _, v, _ in rows]), np.array([n for _, _, n in rows]))
    return data, options


def test_the_gains_are_each_note_over_passing_on_every_decision(tiny):
    data, options = tiny
    assert len(data.observations) == len(data.values) == len(data.episodes) > 3
    assert set(data.episodes.tolist()) == {0, 1, 2}
    gains = data.gains(options)
    assert gains.shape == (len(data.values), len(options))
    assert np.allclose(gains[:, 0], data.values[:, options[0].index] - data.values[:, 0])
    assert np.all(np.abs(gains) <= 1.0)


@pytest.mark.parametrize("fit_name", list(FITS))
def test_a_fit_trains_the_n_gram_table_only_when_its_fit_says_so(tiny, fit_name):
    data, options = tiny
    setting = StudySetting(
        train_tasks=1, train_forks=2, dev_limit=1, dev_seeds=1, limit=1, seeds=1, max_turns=10, target=1.0, epochs=2
    )
    steerer, info = fit(data, options, 0, setting, fit_name)
    initial = build_steerer("encoder", options, {"seed": 0})
    assert torch.equal(steerer.bag.weight, initial.bag.weight) is not FITS[fit_name]
    assert not torch.equal(steerer.encode.weight, initial.encode.weight)
    assert info["lr"] in LEARNING_RATES and 1 <= info["epoch"] <= 2 and info["held_out_states"] > 0
    assert set(info["held_out_curves"]) == {str(lr) for lr in LEARNING_RATES}


@pytest.mark.slow
def test_the_study_runs_end_to_end(tmp_path, capsys):
    assert main(["--quick", "--out", str(tmp_path / "runs"), "--summary", str(tmp_path), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["rows"]) == set(ROWS)
    assert set(summary["gains"]) == {f"{a} - {b}" for a, b in GAINS}
    for gain in summary["gains"].values():
        expected = "reproduces" if gain["low"] > 0 else "opposite" if gain["high"] < 0 else "not shown"
        assert gain["low"] <= gain["mean"] <= gain["high"] and gain["verdict"] == expected
    assert set(summary["place"]) == set(FITS) and summary["ceiling_over_rule"] > 0
    assert {f["fit"] for f in summary["fits"]} == set(FITS) and len(summary["fits"]) == 2 * len(FITS)
    for f in summary["fits"]:
        chosen = f["threshold"]["chosen"]
        assert chosen in f["threshold"]["trials"]  # the dev rule picked one of the thresholds it tried
    assert set(summary["components"]) == {"states", "rl", *FITS}
    assert "studies/drift_supervised/run.py" in summary["code"]["files"]
    with gzip.open(tmp_path / "episodes.jsonl.gz", "rt") as fh:
        episodes = [json.loads(line) for line in fh]
    assert len(episodes) == (3 + 2 * len(FITS)) * 7  # 3 rows + each fit's 2 seeds, one task of 7 benchmarks
    assert "place between the fixed rule" in capsys.readouterr().out
