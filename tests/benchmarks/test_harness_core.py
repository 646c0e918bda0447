"""The harness core without environments: run folders, the episode log, paired intervals, the table."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import ConfigMismatchError, RunFolder
from benchmarks.harness.stats import PairingError, check_pairing, paired_gain, summarize
from benchmarks.harness.tables import results_table
from steer_envs.episodes import EpisodeLog, EpisodeRecord, episode_seed
from steer_envs.errors import SteerEnvsError


def _record(method, task, seed, f1, bench="nq", interventions=0, turns=3):
    return EpisodeRecord(
        method=method,
        task_id=task,
        benchmark=bench,
        seed=seed,
        f1=f1,
        em=float(f1 == 1.0),
        reward=f1,
        interventions=interventions,
        executor_turns=turns,
        decisions=turns,
    )


def test_run_folder_refuses_a_different_config(tmp_path):
    cfg = EvalConfig(executor="sim:default", benchmarks=("nq",), split="dev", seeds=2, limit=3)
    folder = RunFolder(tmp_path / "run", cfg)
    RunFolder(tmp_path / "run", cfg)  # same config: reopened without complaint
    other = EvalConfig(executor="sim:weak", benchmarks=("nq",), split="dev", seeds=2, limit=3)
    assert RunFolder(tmp_path / "run", other).config.executor == "sim:weak"  # nothing ran: no claim, replaced
    folder = RunFolder(tmp_path / "run", cfg)
    folder.episodes_path("no_supervision").write_text('{"task_id": "t"}\n')  # an episode ran: a claim
    with pytest.raises(ConfigMismatchError) as err:
        RunFolder(tmp_path / "run", other)
    message = str(err.value)
    assert "different configuration" in message and "sim:default" in message and "sim:weak" in message
    assert "--out" in message
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert stored["executor"] == "sim:default"  # the folder was not touched


def test_run_folder_refuses_same_label_with_different_options(tmp_path):
    folder = RunFolder(tmp_path / "run", EvalConfig(benchmarks=("nq",), split="dev", seeds=1, limit=2))
    folder.register_method("random", {"p": 0.1})
    folder.register_method("random", {"p": 0.1})
    with pytest.raises(ConfigMismatchError, match="different options"):
        folder.register_method("random", {"p": 0.2})


def test_config_pins_the_task_list(tmp_path):
    cfg = EvalConfig(benchmarks=("nq", "musique"), split="dev", seeds=1, limit=2).resolved()
    assert [t.benchmark for t in cfg.tasks()] == ["nq", "nq", "musique", "musique"]
    assert len(cfg.task_ids_sha) == 16
    longer = EvalConfig(benchmarks=("nq", "musique"), split="dev", seeds=1, limit=3).resolved()
    assert longer.config_hash() != cfg.config_hash()


def test_skip_takes_the_tasks_after_the_first_ones(tmp_path):
    """``skip`` passes over the first tasks of each benchmark (a confirmation on tasks a ``--limit`` run never used);
    it is part of the protocol, so a folder made with one skip refuses another."""
    first = EvalConfig(benchmarks=("nq", "musique"), split="dev", seeds=1, limit=4)
    head = EvalConfig(benchmarks=("nq", "musique"), split="dev", seeds=1, limit=2)
    later = EvalConfig(benchmarks=("nq", "musique"), split="dev", seeds=1, limit=2, skip=2)
    head_ids = {t.id for t in head.tasks()}
    assert [t.id for t in later.tasks()] == [t.id for t in first.tasks() if t.id not in head_ids]
    assert first.protocol()["skip"] == 0 and later.protocol()["skip"] == 2
    assert EvalConfig.from_json(later.to_json()) == later
    assert later.resolved().config_hash() != head.resolved().config_hash()
    RunFolder(tmp_path / "run", later).episodes_path("m").write_text("{}\n")  # an episode: the folder is claimed
    with pytest.raises(ConfigMismatchError, match="skip: folder has 2, this run asks for 0"):
        RunFolder(tmp_path / "run", head)
    with pytest.raises(SteerEnvsError, match="--skip"):
        EvalConfig(skip=-1)
    with pytest.raises(SteerEnvsError, match="--skip 10000 leaves no dev task"):
        EvalConfig(benchmarks=("bamboogle",), split="dev", skip=10_000).tasks()
    # a benchmark the skip empties stays in the protocol (training reads it) and has no tasks; the others do
    n_nq = len(EvalConfig(benchmarks=("nq",), split="dev").tasks())
    mixed = EvalConfig(benchmarks=("nq", "bamboogle"), split="dev", skip=n_nq - 1)
    assert [t.benchmark for t in mixed.tasks()] == ["nq"] and mixed.benchmarks == ("nq", "bamboogle")


def test_bad_config_values_are_user_errors():
    with pytest.raises(SteerEnvsError, match="--seeds"):
        EvalConfig(seeds=0)
    with pytest.raises(SteerEnvsError, match="benchmark"):
        EvalConfig(benchmarks=("nope",), limit=1).tasks()


def test_episode_seed_is_stable_and_distinct():
    assert episode_seed("nq/1", 0) == episode_seed("nq/1", 0)
    assert len({episode_seed(f"nq/{i}", s) for i in range(50) for s in range(3)}) == 150


def test_episode_log_resumes_and_repairs_a_torn_line(tmp_path):
    path = tmp_path / "m.jsonl"
    log = EpisodeLog(path)
    log.append(_record("m", "t1", 0, 0.5))
    log.append(_record("m", "t2", 0, 1.0))
    with open(path, "a") as fh:
        fh.write('{"method": "m", "task_id": "t3"')  # killed mid-write
    again = EpisodeLog(path)
    assert [r.task_id for r in again.records] == ["t1", "t2"]
    assert again.done("t2", 0, "m") and not again.done("t3", 0, "m")
    again.append(_record("m", "t3", 0, 0.0))
    again.append(_record("m", "t3", 0, 0.0))  # a duplicate key is not written twice
    assert [json.loads(x)["task_id"] for x in path.read_text().splitlines()] == ["t1", "t2", "t3"]


def test_pairing_check_catches_mismatched_tasks():
    a = [_record("a", "t1", 0, 1.0), _record("a", "t2", 0, 0.0)]
    b = [_record("b", "t1", 0, 1.0), _record("b", "t3", 0, 0.0)]
    with pytest.raises(PairingError, match="different"):
        check_pairing({"a": a, "b": b})


def test_paired_interval_covers_a_known_gain_and_shrinks_with_pairing():
    rng = np.random.default_rng(0)
    base, method = [], []
    for i in range(200):
        difficulty = rng.uniform()  # large task-to-task variance, shared by both methods
        for s in range(2):
            b = float(np.clip(difficulty + rng.normal(0, 0.05), 0, 1))
            base.append(_record("none", f"t{i}", s, b, bench="nq" if i % 2 else "musique"))
            method.append(_record("m", f"t{i}", s, float(np.clip(b + 0.1, 0, 1)), bench="nq" if i % 2 else "musique"))
    per_bench, avg = paired_gain(method, base, ["nq", "musique"])
    assert 5.0 < avg.mean < 10.5 and avg.low > 0 and avg.high < 12
    assert avg.high - avg.low < 3.0  # pairing removes the task variance (unpaired would be ~8 points wide)
    assert set(per_bench) == {"nq", "musique"}
    # no difference: the interval contains zero
    _, null = paired_gain(base, base, ["nq", "musique"])
    assert null.mean == 0 and null.low <= 0 <= null.high


def test_summary_and_table_shape():
    recs = {
        "no_supervision": [_record("none", f"t{i}", 0, 0.5, bench=b) for i, b in enumerate(["nq", "musique"] * 5)],
        "always": [
            _record("always", f"t{i}", 0, 0.7, bench=b, interventions=2, turns=5)
            for i, b in enumerate(["nq", "musique"] * 5)
        ],
    }
    summaries = summarize(recs, ["nq", "musique"])
    assert summaries[0].avg_gain is None
    assert summaries[1].avg_gain.mean == pytest.approx(20.0)
    assert summaries[1].interventions_per_task == 2 and summaries[1].turns_per_task == 5
    assert summaries[1].gain_per_intervention == pytest.approx(10.0)
    table = results_table(summaries, ["nq", "musique"])
    lines = table.strip().splitlines()
    assert lines[0] == "| Method | NQ | MuSiQue | Avg F1 | Int./task | Turns/task |"
    assert lines[2].startswith("| no_supervision | 50.0 | 50.0 | **50.0** |")
    assert "70.0 (+20.0 [+20.0, +20.0])" in lines[3]
