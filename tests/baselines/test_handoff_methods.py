"""The hand-off methods run through the one harness and the unchanged steering trainer (tiny budgets)."""

from __future__ import annotations

import json

import pytest

from baselines.handoff import HANDOFF_ENV, OPEN_GATE_TAU, TAU_FILE
from baselines.registry import get_method, parse_method
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate, write_summary
from steer_envs.episodes import EpisodeLog

TINY = "m=1,k=4,G=2,N=1,bank_tasks=3,dev_tasks=1"


@pytest.fixture()
def folder(tmp_path):
    return RunFolder(
        tmp_path / "run", EvalConfig(benchmarks=("nq", "hotpotqa"), split="dev", seeds=1, limit=2, max_turns=12)
    )


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
    from steer_envs.envs.catalogue import HANDOFF

    scores = selection["scores"]
    # every non-pass option of the hand-off catalogue at every index 0..max_at, nothing else
    assert [(r["option"], r["at"]) for r in scores] == [(t.name, at) for t in HANDOFF[1:] for at in (0, 1)]
    # the chosen rule is the first in grid order with the best dev F1, ties broken towards fewer interventions
    top = max(r["f1"] for r in scores)
    fewest = min(r["interventions"] for r in scores if r["f1"] == top)
    best = next(r for r in scores if (r["f1"], r["interventions"]) == (top, fewest))
    assert selection["split"] == "dev"
    assert selection["chosen"] == {"option": best["option"], "at": best["at"]}, scores


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


def test_best_fixed_rule_picks_the_best_dev_f1_then_the_fewest_interventions(tmp_path, monkeypatch):
    """The choice itself, on dev scores that differ (the real run above scores every rule alike on 2 tasks): the
    real catalogue and selection file, with ``score_rules`` replaced by a table where the answer is known."""
    from baselines import fixed_rule
    from baselines.registry import MethodContext
    from steer_envs.envs.catalogue import HANDOFF

    grid = [(t.name, at) for t in HANDOFF[1:] for at in (0, 1)]
    f1 = {rule: 40.0 for rule in grid} | {grid[3]: 55.0, grid[5]: 55.0, grid[8]: 50.0}
    rate = {rule: 1.0 for rule in grid} | {grid[3]: 1.0, grid[5]: 0.5}

    def scored(context, rules, tasks_per_benchmark, seeds, env_id):
        assert list(rules) == grid and env_id == HANDOFF_ENV
        return [fixed_rule.RuleScore(o, at, f1[(o, at)], f1[(o, at)] - 40.0, rate[(o, at)]) for o, at in rules]

    monkeypatch.setattr(fixed_rule, "score_rules", scored)
    context = MethodContext(
        benchmarks=("nq",),
        workdir=tmp_path,
        progress=False,
        options=parse_method("handoff_best_fixed_rule:max_at=1").options,
    )
    rule = fixed_rule.build_best_fixed_rule(context, HANDOFF_ENV)
    assert (rule.option.name, rule.at) == grid[5]  # F1 55 at half the interventions of the other F1 55
    assert json.loads((tmp_path / fixed_rule.SELECTION_FILE).read_text())["chosen"] == {
        "option": grid[5][0],
        "at": grid[5][1],
    }
