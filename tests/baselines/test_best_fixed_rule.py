"""``best_fixed_rule`` chooses on as many dev tasks as the run's ``--limit`` (not the whole dev split), says what
that costs before it starts, and a table reported on the split it chose on says so."""

from __future__ import annotations

import json

from baselines import fixed_rule
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate_all, same_split_notes
from steer_envs.envs.catalogue import STEERING


def test_the_choice_plays_only_the_runs_limit_of_dev_tasks_and_the_table_says_it_chose_on_its_split(
    tmp_path, monkeypatch, capsys
):
    played = []
    real_play = fixed_rule.play_episode

    def counted(env, policy, seed, task_id):
        played.append(task_id)
        return real_play(env, policy, seed, task_id)

    monkeypatch.setattr(fixed_rule, "play_episode", counted)
    folder = RunFolder(tmp_path / "run", EvalConfig(benchmarks=("nq", "hotpotqa"), split="dev", limit=2, seeds=1))
    _, _, table = evaluate_all(folder, ["no_supervision", "best_fixed_rule:max_at=0"], progress=False)

    rules = len(STEERING) - 1  # every non-pass option at decision 0
    assert len(set(played)) == 4  # 2 dev tasks of each of 2 benchmarks, not the whole dev split
    assert len(played) == (rules + 1) * 4  # always-pass, then every rule, on the same pairs
    selection = json.loads(next(folder.root.glob("checkpoints/best_fixed_rule*/selection.json")).read_text())
    assert selection["search"] == {"dev_tasks_per_benchmark": 2, "seeds": 1, "max_at": 0}
    err = capsys.readouterr().err
    assert f"choosing among {rules} fixed rules on the dev split: 4 dev tasks (2 per benchmark)" in err
    assert f"{(rules + 1) * 4} episodes" in err
    assert "*best_fixed_rule:max_at=0: chose its setting on the `dev` split this table reports on" in table
    assert "*no_supervision" not in table  # the reference chose nothing: no note for it
    assert "its setting on the `dev` split" in (folder.root / "table.md").read_text()

    played.clear()  # a resumed run keeps the cached choice: nothing is played on dev again
    evaluate_all(folder, ["best_fixed_rule:max_at=0"], progress=False)
    assert played == []


def test_a_table_on_another_split_than_the_choice_has_no_note(tmp_path):
    folder = RunFolder(tmp_path / "run", EvalConfig(benchmarks=("nq",), split="test", limit=1, seeds=1))
    folder.register_method("best_fixed_rule", {"method": "best_fixed_rule", "chosen_on": "dev"})

    class Row:
        method = "best_fixed_rule"

    assert same_split_notes(folder, [Row()]) == ""
    dev = RunFolder(tmp_path / "dev", EvalConfig(benchmarks=("nq",), split="dev", limit=1, seeds=1))
    dev.register_method("handoff_rl", {"method": "handoff_rl", "tau_chosen_on": "dev"})
    Row.method = "handoff_rl"
    assert "handoff_rl: chose tau on the `dev` split" in same_split_notes(dev, [Row()])
