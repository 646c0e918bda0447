"""The hand-off methods run through the one harness and the unchanged steering trainer (tiny budgets)."""
from __future__ import annotations

import json

import pytest

from baselines.handoff import HANDOFF_ENV, OPEN_GATE_TAU, TAU_FILE
from baselines.registry import get_method
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.records import EpisodeLog
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate, write_summary

TINY = "m=1,k=4,G=2,N=1,bank_tasks=3,dev_tasks=1"


@pytest.fixture()
def folder(tmp_path):
    return RunFolder(tmp_path / "run", EvalConfig(benchmarks=("nq", "hotpotqa"), split="dev", seeds=1, limit=2, max_turns=12))


def test_every_handoff_method_acts_in_the_handoff_env():
    for name in ("handoff_none", "handoff_random", "handoff_best_fixed_rule", "handoff_zero_shot", "handoff_rl"):
        assert get_method(name).env_id == HANDOFF_ENV


def test_baselines_and_zero_shot_operating_points(folder):
    none = evaluate(folder, "handoff_none", progress=False).records
    assert all(r.interventions == 0 for r in none) and len(none) == 4
    forced = evaluate(folder, "handoff_zero_shot:every=1", progress=False).records
    assert all(r.interventions == r.decisions for r in forced)  # the gate is open at every hand-off
    assert sum(r.executor_turns for r in forced) > sum(r.executor_turns for r in none)
    covered = evaluate(folder, "handoff_zero_shot:coverage=0.25,dev_tasks=2", progress=False)
    chosen = json.loads(next(folder.root.glob(f"checkpoints/handoff_zero_shot*/{TAU_FILE}")).read_text())
    assert chosen["0.25"]["split"] == "dev" and 0 < chosen["0.25"]["tau"] < 1 and chosen["0.25"]["tau"] != OPEN_GATE_TAU
    assert covered.records and all(r.decisions >= r.interventions for r in covered.records)
    rnd = evaluate(folder, "handoff_random:p=1.0", progress=False).records
    assert all(r.interventions == r.decisions for r in rnd)
    summaries, table = write_summary(folder)
    assert summaries[0].method == "handoff_none" and summaries[1].avg_gain is not None  # paired against handoff_none


def test_best_fixed_rule_is_chosen_on_dev(folder):
    evaluate(folder, "handoff_best_fixed_rule:max_at=1,dev_tasks=1", progress=False)
    selection = json.loads(next(folder.root.glob("checkpoints/handoff_best_fixed_rule*/selection.json")).read_text())
    assert selection["split"] == "dev" and selection["chosen"]["at"] in (0, 1)
    assert len(selection["scores"]) == 2 * (len(__import__("steer_envs.envs.catalogue", fromlist=["HANDOFF"]).HANDOFF) - 1)


@pytest.mark.slow
def test_rl_trains_with_the_unchanged_trainer_on_the_handoff_env(folder):
    outcome = evaluate(folder, f"handoff_rl:coverage=0.25,{TINY}", progress=False)
    run_dir = next(folder.root.glob("checkpoints/handoff_rl*"))
    config = json.loads((run_dir / "config.json").read_text())["config"]
    assert config["env_id"] == HANDOFF_ENV and config["backbone_args"] == {"features": "handoff"}
    assert len((run_dir / "log.jsonl").read_text().splitlines()) == 1
    assert len(EpisodeLog(folder.episodes_path(outcome.label)).records) == 4
    from agents.steering.trainer import load_model

    steerer, payload = load_model(run_dir)
    assert steerer.features == "handoff" and payload["spec"]["features"] == "handoff"
