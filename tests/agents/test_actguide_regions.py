"""Task regions (agents/actguide/regions.py): in-region / barrier / out of reach, measured on the real env."""

from __future__ import annotations

import json
import re

import pytest

from agents.actguide.config import ActGuideConfig
from agents.actguide.learners import build_learner
from agents.actguide.regions import REGIONS, RegionConfig, classify, read_regions, region_counts, region_table
from agents.actguide.tasks import make_env, sample_tasks
from steer_envs.errors import SteerEnvsError


def _env():
    return make_env(ActGuideConfig(benchmarks=["hotpotqa", "nq", "triviaqa"], max_turns=4), split="dev")


def test_regions_follow_their_measurements_and_repeat_for_a_seed():
    env = _env()
    ids = sample_tasks(env, 3, 0)
    config = RegionConfig(k_unguided=6, k_guided=3, max_k=3)
    regions = classify(build_learner("admissible", {}), env, ids, config, seed=0)
    assert [r.task_id for r in regions] == ids
    for r in regions:
        assert r.region in REGIONS and r.unguided_finished == config.k_unguided  # the simulator never fails
        if r.unguided_successes:
            assert r.region == "in_region" and not r.guided
        elif r.region == "barrier":
            assert r.guided[r.lifting_k] > 0 and all(r.guided[k] == 0 for k in r.guided if k < r.lifting_k)
            assert r.lifting_k == max(r.guided)  # the search stops at the first hint that lifts
        else:
            assert r.region == "out_of_reach" and r.lifting_k is None and r.guided
            assert all(v == 0 for v in r.guided.values())
    counts = region_counts(regions)
    assert sum(counts["all"].values()) == len(ids)
    assert sum(sum(c.values()) for b, c in counts.items() if b != "all") == len(ids)
    again = classify(build_learner("admissible", {}), env, ids, config, seed=0)
    assert [(r.region, r.unguided_successes, r.guided) for r in again] == [
        (r.region, r.unguided_successes, r.guided) for r in regions
    ]
    table = region_table(regions, config)
    assert "Pass@6" in table and f"| all | {len(ids)} |" in table


def test_bad_config_and_unknown_task_are_clear_errors(tmp_path):
    with pytest.raises(SteerEnvsError, match="k_unguided must be at least 1"):
        RegionConfig(k_unguided=0)
    with pytest.raises(SteerEnvsError, match="not in this env's task set"):
        classify(build_learner("admissible", {}), _env(), ["no-such-task"], RegionConfig(2, 2, 1))
    bad = tmp_path / "regions.json"
    bad.write_text("{}")
    with pytest.raises(SteerEnvsError, match="not a regions.json"):
        read_regions(bad)


def test_cli_writes_regions_per_model(tmp_path, capsys):
    from steer_envs.cli.main import main

    out = tmp_path / "regions"
    assert (
        main(
            [
                "barrier",
                "--regions",
                "--model",
                "initial",
                "--split",
                "dev",
                "--tasks-per-benchmark",
                "1",
                "--K-unguided",
                "3",
                "--K-guided",
                "2",
                "--max-k",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    payload = json.loads((out / "regions.json").read_text())
    assert payload["config"] == {"k_unguided": 3, "k_guided": 2, "max_k": 1}
    assert len(payload["tasks"]) == 7 and "| all | 7 |" in printed  # one task of each of the seven benchmarks
    assert set(read_regions(out / "regions.json").values()) <= set(REGIONS)
    assert (out / "regions.md").read_text().startswith("Regions of initial")


def test_rl_pool_keeps_the_tasks_of_the_chosen_regions_and_refuses_a_file_of_other_tasks(tmp_path):
    from agents.actguide.tasks import training_pool
    from steer_envs.cli.main import main

    base = ActGuideConfig(benchmarks=["hotpotqa", "nq"], split="dev", tasks_per_benchmark=3, max_turns=4)
    out = tmp_path / "pool_regions"
    # the pool's own tasks: the split, pool size and task seed of the config
    assert (
        main(
            [
                "barrier",
                "--regions",
                "--model",
                "initial",
                "--split",
                "dev",
                "--tasks-per-benchmark",
                "3",
                "--seed",
                str(base.task_seed),
                "--K-unguided",
                "4",
                "--K-guided",
                "2",
                "--max-k",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    regions = read_regions(out / "regions.json")
    env = make_env(base)
    pool = training_pool(env, base)
    assert set(pool) <= set(regions)
    for keep in ("barrier,in_region", "out_of_reach", "in_region,barrier,out_of_reach"):
        kept_regions = set(keep.split(","))
        expected = [t for t in pool if regions[t] in kept_regions]
        config = ActGuideConfig(**{**base.to_dict(), "pool_regions": str(out / "regions.json"), "pool_keep": keep})
        if expected:
            assert training_pool(env, config) == expected  # the pool's order, its other tasks left out
        else:
            with pytest.raises(SteerEnvsError, match="no RL-pool task is in the regions"):
                training_pool(env, config)
    assert ActGuideConfig().fingerprint() == ActGuideConfig(pool_keep="barrier,in_region").fingerprint()
    assert ActGuideConfig(pool_regions="x.json").fingerprint() != ActGuideConfig().fingerprint()
    with pytest.raises(SteerEnvsError, match="pool_keep must name regions"):
        ActGuideConfig(pool_keep="barrier,hard")
    other = ActGuideConfig(**{**base.to_dict(), "tasks_per_benchmark": 5, "pool_regions": str(out / "regions.json")})
    with pytest.raises(SteerEnvsError, match=r"has no region for .* --tasks-per-benchmark 5 --seed 0"):
        training_pool(env, other)


def test_barrier_diagnostics_of_one_region_only(tmp_path, capsys):
    """``barrier --regions-file R --region X``: the diagnostics of the group X of a regions file (the barrier
    group before and after training), and clear refusals of a bad name or a file of other tasks."""
    from steer_envs.cli.main import main

    regions_dir = tmp_path / "regions"
    common = ["--model", "initial", "--split", "dev", "--tasks-per-benchmark", "1", "--seed", "0"]
    assert (
        main(
            [
                "barrier",
                "--regions",
                *common,
                "--K-unguided",
                "3",
                "--K-guided",
                "2",
                "--max-k",
                "1",
                "--out",
                str(regions_dir),
            ]
        )
        == 0
    )
    regions = read_regions(regions_dir / "regions.json")
    counts = {r: sum(v == r for v in regions.values()) for r in set(regions.values())}
    region = max(counts, key=counts.get)
    out = tmp_path / "diag"
    assert (
        main(
            [
                "barrier",
                *common,
                "--K",
                "2",
                "--max-k",
                "1",
                "--horizon",
                "2",
                "--regions-file",
                str(regions_dir / "regions.json"),
                "--region",
                region,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads((out / "barrier.json").read_text())[0]["tasks"] == counts[region] < len(regions)
    assert (
        main(
            [
                "barrier",
                *common,
                "--regions-file",
                str(regions_dir / "regions.json"),
                "--region",
                "hard",
                "--out",
                str(out),
            ]
        )
        != 0
    )
    assert "--region takes regions among in_region, barrier" in capsys.readouterr().err
    assert (
        main(
            [
                "barrier",
                *common[:-4],
                "--tasks-per-benchmark",
                "2",
                "--seed",
                "0",
                "--regions-file",
                str(regions_dir / "regions.json"),
                "--out",
                str(out),
            ]
        )
        != 0
    )
    assert re.search(r"has no region for .* --tasks-per-benchmark 2 --seed 0", capsys.readouterr().err)
