"""studies/actguide_mechanism: a group's reward pattern, a recording trainer that trains exactly as the plain one,
and the study end to end at the barrier study's toy size."""

from __future__ import annotations

import json

import pytest

from agents.actguide.config import ActGuideConfig
from agents.actguide.rollout import Trajectory
from agents.actguide.trainer import ActGuideTrainer
from studies.actguide_barrier.run import Plan
from studies.actguide_mechanism.run import ARMS, RECORDS, MechanismTrainer, main, pattern


def group(*rewards: float) -> list[Trajectory]:
    return [Trajectory("t", "skill_chain", 1, "prompt", reward=r) for r in rewards]


def test_a_group_is_all_fail_all_success_or_mixed():
    assert pattern(group(0, 0, 0)) == "all_fail"
    assert pattern(group(1, 1)) == "all_success"
    assert pattern(group(0, 1, 0)) == "mixed"


def _without_times(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("iteration_s", "wall_s")} for r in rows]


@pytest.mark.slow
def test_recording_trains_exactly_as_the_plain_trainer(tmp_path):
    """The same config through both trainers: every logged figure of every iteration is the same."""
    plan = Plan(out=tmp_path).make_quick()
    config = ActGuideConfig.from_dict(plan.setting).variant("actguide")
    plain = ActGuideTrainer(config, tmp_path / "plain").run()
    recorded = MechanismTrainer(config, tmp_path / "recorded").run()
    assert _without_times(plain.log) == _without_times(recorded.log) and plain.log
    rows = [json.loads(line) for line in (tmp_path / "recorded" / RECORDS).read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(len(plain.log)))
    for row, logged in zip(rows, plain.log):
        assert row["all_fail"] + row["all_success"] + row["mixed"] == row["guided_family_groups"]
        assert row["guided_family_groups"] <= logged["guided_groups"]
        assert len(row["link_adv"]) == len(row["link_r"]) == len(row["link_weight"]) == row["link_steps"]
        assert all(0 <= w <= 1 for w in row["link_weight"])


@pytest.mark.slow
def test_the_study_runs_end_to_end(tmp_path, capsys):
    assert main(["--quick", "--out", str(tmp_path / "runs"), "--summary", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["arms"]) == set(ARMS) and summary["seeds"] == 1
    for arm in summary["arms"].values():
        run = arm["runs"]["seed0"]
        assert run["iterations"] == run["iterations_logged"] > 0
        shares = [v for v in run["share"].values() if v is not None]
        assert not shares or abs(sum(shares) - 1) < 1e-3
    assert "studies/actguide_mechanism/run.py" in summary["code"]["files"] and summary["code"]["commits"]
    assert "| actguide | seed0 |" in capsys.readouterr().out
