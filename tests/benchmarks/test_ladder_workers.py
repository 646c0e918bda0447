"""``steer-envs headroom --workers N`` spreads episodes and forks over processes and gives the same ladder as one
process (every episode and fork is seeded by its own task and index; results are gathered in protocol order)."""

from __future__ import annotations

import json

import numpy as np

from benchmarks.harness.ladder import _chunks
from steer_envs.cli.main import main

ARGV = [
    "--executor",
    "sim:drift1",
    "--split",
    "dev",
    "--benchmarks",
    "nq",
    "hotpotqa",
    "--limit",
    "2",
    "--seeds",
    "2",
    "--dev-limit",
    "2",
    "--max-at",
    "1",
    "--train-tasks",
    "3",
    "--train-forks",
    "1",
    "--planner-forks",
    "1",
    "--rungs",
    "none",
    "best_fixed_rule",
    "learnable_ceiling",
    "lookahead_planner",
]


def test_chunks_keep_order_and_cover_everything():
    items = list(range(11))
    for n in (1, 3, 4, 11, 20):
        chunks = _chunks(items, n)
        assert len(chunks) <= n and [x for c in chunks for x in c] == items


def test_workers_give_the_same_ladder_as_one_process(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(["headroom", *ARGV, "--out", str(one)]) == 0
    assert main(["headroom", *ARGV, "--workers", "2", "--out", str(two)]) == 0
    a, b = (json.loads((d / "ladder.json").read_text(encoding="utf-8")) for d in (one, two))
    assert a["rows"] == b["rows"] and a["choices"] == b["choices"] and a["config"] == b["config"]
    ga, gb = np.load(one / "train_gains.npz"), np.load(two / "train_gains.npz")
    assert np.array_equal(ga["X"], gb["X"]) and np.array_equal(ga["G"], gb["G"])
    for rung in ("none", "best_fixed_rule", "learnable_ceiling", "lookahead_planner"):
        lines = [(d / "episodes" / f"{rung}.jsonl").read_text(encoding="utf-8").splitlines() for d in (one, two)]
        keys = [sorted((r["task_id"], r["seed"], r["f1"]) for r in map(json.loads, ls)) for ls in lines]
        assert keys[0] == keys[1] and len(keys[0]) == 8


def test_a_run_killed_while_measuring_train_gains_resumes_from_its_finished_parts(tmp_path, monkeypatch):
    from benchmarks.harness import ladder as ladder_module

    full, killed = tmp_path / "full", tmp_path / "killed"
    rungs = ["--rungs", "none", "learnable_ceiling"]
    assert main(["headroom", *ARGV[: ARGV.index("--rungs")], *rungs, "--out", str(full)]) == 0
    calls = []
    real = ladder_module.Ladder.measure_gains

    def dies_on_the_third_part(self, items):
        calls.append(len(items))
        if len(calls) == 3:
            raise KeyboardInterrupt  # the machine went away
        return real(self, items)

    monkeypatch.setattr(ladder_module, "GAIN_PARTS", 4)
    monkeypatch.setattr(ladder_module.Ladder, "measure_gains", dies_on_the_third_part)
    argv = ["headroom", *ARGV[: ARGV.index("--rungs")], *rungs, "--out", str(killed)]
    try:
        main(argv)
    except KeyboardInterrupt:
        pass
    assert len(list((killed / "train_gains.parts").glob("*.npz"))) == 2 and not (killed / "train_gains.npz").exists()
    calls.clear()
    monkeypatch.setattr(ladder_module.Ladder, "measure_gains", lambda self, items: calls.append(1) or real(self, items))
    assert main(argv) == 0
    assert len(calls) == 1  # 6 train items in parts of 2: only the third part, the one that had not finished
    ga, gb = np.load(full / "train_gains.npz"), np.load(killed / "train_gains.npz")
    assert np.array_equal(ga["X"], gb["X"]) and np.array_equal(ga["G"], gb["G"])
    assert not (killed / "train_gains.parts").exists()
