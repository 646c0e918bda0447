"""benchmarks/actguide_regions.py and actguide_alignment.py: the by-region comparison and the reference-action
alignment from tiny real runs (train, regions, evaluate)."""
from __future__ import annotations

import json

import pytest
import torch

from agents.actguide.config import ActGuideConfig
from agents.actguide.sft import demonstrations
from agents.actguide.tasks import make_env
from agents.actguide.trainer import load_learner
from benchmarks.actguide_alignment import Alignment, table
from benchmarks.actguide_alignment import main as align_main
from benchmarks.actguide_regions import episode_folder, main, pass_at_k, success
from steer_envs.cli.main import main as cli
from steer_envs.episodes import EpisodeLog, EpisodeRecord
from steer_envs.errors import SteerEnvsError

SETTING = {"benchmarks": ["nq", "triviaqa"], "tasks_per_benchmark": 3, "budget": 24, "batch_tasks": 2,
           "group_size": 3, "max_turns": 3}


def _rec(task: str, seed: int, em: float) -> EpisodeRecord:
    return EpisodeRecord(method="m", task_id=task, benchmark="nq", seed=seed, f1=em, em=em, reward=em)


def test_pass_at_k_is_per_task_and_training_seed():
    records = [_rec("a", 0, 0), _rec("a", 1, 1), _rec("a", 100, 0), _rec("b", 0, 0), _rec("c", 0, 1)]
    assert pass_at_k(records, {"a", "b"}) == pytest.approx(100 / 3)  # (a, seed 0) hit; (a, seed 1), (b, 0) missed
    assert success(records, {"a"}) == pytest.approx(100 / 3)


def test_an_alignment_row_without_reference_steps_says_so():
    rows = [Alignment("base", "barrier", 0, None, None, None), Alignment("base", "in_region", 4, 0.25, 2.0, 0.5)]
    text = table(rows)
    assert "| barrier | base | 0 | – | – | – |" in text and "| in-region | base | 4 | 0.250 | 2.00 | 50.0% |" in text


def test_each_evaluation_split_keeps_its_own_episodes():
    # the test split keeps the folder name run folders already have; train and dev episodes never mix with it
    assert episode_folder("test") == "episodes_regions"
    assert len({episode_folder(s) for s in ("train", "dev", "test")}) == 3


@pytest.mark.slow
def test_page_from_tiny_runs_and_resume(tmp_path):
    setting = tmp_path / "setting.json"
    setting.write_text(json.dumps(SETTING))
    runs = tmp_path / "runs"
    assert cli(["train", "actguide", "--config", str(setting), "--variant", "zero_rl", "--out", str(runs / "runs" / "base"),
                "--no-progress"]) == 0
    for variant in ("zero_rl", "actguide"):
        assert cli(["train", "actguide", "--config", str(setting), "--variant", variant, "--init-from",
                    str(runs / "runs" / "base"), "--out", str(runs / "runs" / variant / "seed0"), "--no-progress"]) == 0
    assert cli(["barrier", "--regions", "--model", str(runs / "runs" / "base"), "--split", "dev",
                "--tasks-per-benchmark", "2", "--K-unguided", "4", "--K-guided", "2", "--max-k", "2",
                "--out", str(runs / "regions")]) == 0
    doc = tmp_path / "page.md"
    argv = ["--runs", str(runs), "--regions", str(runs / "regions" / "regions.json"), "--setting", str(setting),
            "--split", "dev", "--tasks-per-benchmark", "2", "--rollouts", "2", "--seeds", "1", "--doc", str(doc)]
    assert main(argv) == 0
    text = doc.read_text()
    regions = json.loads((runs / "regions" / "regions.json").read_text())["tasks"]
    total = sum(1 for _ in regions)
    assert total == 4 and "| barrier |" in text and "| in-region |" in text and "| nq |" in text
    counts = [int(line.split("|")[2]) for line in text.splitlines() if line.startswith(("| barrier", "| in-region",
                                                                                        "| out of reach"))]
    assert sum(counts) == total
    logs = {p.name: len(EpisodeLog(p).records) for p in (runs / episode_folder("dev")).glob("*.jsonl")}
    assert logs == {"base.jsonl": 8, "zero_rl.jsonl": 8, "actguide.jsonl": 8}  # 4 tasks x 2 rollouts each
    assert main(argv) == 0  # a rerun reads the logs back
    assert {p.name: len(EpisodeLog(p).records) for p in (runs / episode_folder("dev")).glob("*.jsonl")} == logs
    with pytest.raises(SteerEnvsError, match="no trained model.pt"):
        main([*argv[:-2], "--seeds", "2"])

    # the "trained where the barrier is" section: both methods again, on the RL pool kept to chosen regions of the
    # base's regions on the pool's own train tasks (every region kept here: a tiny pool may have no barrier task)
    assert cli(["barrier", "--regions", "--model", str(runs / "runs" / "base"), "--split", "train",
                "--tasks-per-benchmark", "3", "--seed", "0", "--K-unguided", "4", "--K-guided", "2", "--max-k", "2",
                "--out", str(runs / "regions_train")]) == 0
    pool_setting = tmp_path / "pool_setting.json"
    pool_setting.write_text(json.dumps({**SETTING, "pool_regions": str(runs / "regions_train" / "regions.json"),
                                        "pool_keep": "in_region,barrier,out_of_reach"}))
    pool_runs = tmp_path / "pool_runs"
    for variant in ("zero_rl", "actguide"):
        assert cli(["train", "actguide", "--config", str(pool_setting), "--variant", variant, "--init-from",
                    str(runs / "runs" / "base"), "--out", str(pool_runs / "runs" / variant / "seed0"), "--no-progress"]) == 0
    assert main([*argv, "--pool-runs", str(pool_runs), "--pool-setting", str(pool_setting)]) == 0
    text = doc.read_text()
    assert "## Trained where the barrier is" in text and "pool: 6 of the RL pool's 6 train tasks" in text
    budget = [line for line in text.splitlines() if line.startswith(("| all tasks |", "| barrier + in-region |"))]
    assert len(budget) == 4 and all(line.split("|")[4].strip().endswith("%") for line in budget)
    assert {p.name: len(EpisodeLog(p).records) for p in (pool_runs / episode_folder("dev")).glob("*.jsonl")} == \
        {"zero_rl.jsonl": 8, "actguide.jsonl": 8}
    with pytest.raises(SystemExit):  # a second folder without its setting is a usage error
        main([*argv, "--pool-runs", str(pool_runs)])

    # the reference-action alignment of the same runs on the pool's own tasks (benchmarks.actguide_alignment)
    out = tmp_path / "align.json"
    keep = "in_region,barrier,out_of_reach"
    assert align_main(["--setting", str(setting), "--regions", str(runs / "regions_train" / "regions.json"),
                       "--model", f"base={runs / 'runs' / 'base'}", "--model", f"again={runs / 'runs' / 'base'}",
                       "--model", f"actguide={pool_runs / 'runs' / 'actguide' / 'seed0'}", "--keep", keep,
                       "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert len(rows) == 9 and sum(r["steps"] for r in rows if r["model"] == "base") > 0
    by = {(r["model"], r["region"]): r for r in rows}
    for region in keep.split(","):
        assert by["base", region] == {**by["again", region], "model": "base"}  # same weights, same scores
    # against a direct computation: the base's mean probability of the reference actions of its largest region
    region = max(keep.split(","), key=lambda r: by["base", r]["steps"])
    ids = [t["task_id"] for t in json.loads((runs / "regions_train" / "regions.json").read_text())["tasks"]
           if t["region"] == region]
    learner = load_learner(runs / "runs" / "base")[0]
    views, actions, _ = demonstrations(make_env(ActGuideConfig(**SETTING)), learner, ids, 0)
    assert len(views) == by["base", region]["steps"] > 0
    with torch.no_grad():
        direct = float(torch.cat([t.reshape(-1) for t in learner.token_logprobs(views, actions)]).exp().mean())
    assert by["base", region]["mean_p"] == pytest.approx(direct, rel=1e-5)
    with pytest.raises(SystemExit):  # a model without NAME= is a usage error
        align_main(["--setting", str(setting), "--regions", str(out), "--model", str(runs / "runs" / "base")])
