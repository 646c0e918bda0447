"""The rollout pool: local and processes give the same results in item order, for any worker count and
completion order, on a toy job and on the real loops (q(s) labels, training losses, evaluation records,
filtered BC labels); a worker killed mid-run is replaced and the result is unchanged."""

from __future__ import annotations

import argparse

import pytest

from agents.steering.config import SteeringConfig
from agents.steering.rollouts import measure_states
from agents.steering.trainer import SteeringTrainer
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate
from steer_envs.errors import SteerEnvsError
from steer_envs.rollouts import Job, PoolConfig, PoolError, add_pool_arguments, make_pool, pool_config_from_args

from .support import (
    TINY_TRAINING,
    Offset,
    add_after_a_nap,
    bank_and_requests,
    kill_once,
    labels,
    records_without_time,
)

ITEMS = list(range(40))


@pytest.mark.parametrize("workers", [1, 2])
def test_processes_match_local_in_item_order(workers):
    job = Job(Offset(100), add_after_a_nap)
    local = [value for value, _ in make_pool().map(job, ITEMS)]
    ticks = []
    with make_pool(PoolConfig("processes", workers)) as pool:
        got = pool.map(job, ITEMS, progress=ticks.append)
        pids = {pid for _, pid in got}
        order = [position for position, _ in pool.imap_unordered(job, ITEMS)]
        assert [v for v, _ in pool.imap(job, ITEMS)] == local  # ordered streaming too
    assert [value for value, _ in got] == local == [i + 100 for i in ITEMS]
    assert len(ticks) == len(ITEMS)  # the progress callback saw every item
    assert len(pids) == workers  # the items really ran in that many processes
    assert sorted(order) == ITEMS


def test_an_item_that_raises_stops_the_call_with_the_workers_traceback():
    with make_pool(PoolConfig("processes", 2)) as pool:
        with pytest.raises(PoolError, match="(?s)item 3 failed.*ValueError: negative item -1"):
            pool.map(Job(Offset(0), add_after_a_nap), [0, 1, 2, -1, 4])
        assert [v for v, _ in pool.map(Job(Offset(1), add_after_a_nap), [1, 2])] == [2, 3]  # usable afterwards


def test_a_killed_worker_is_replaced_and_the_result_is_the_same(monkeypatch, tmp_path):
    marker = kill_once(monkeypatch, tmp_path, after_items=3)
    job = Job(Offset(7), add_after_a_nap)
    with make_pool(PoolConfig("processes", 2)) as pool:
        got = [value for value, _ in pool.map(job, ITEMS)]
        assert pool.replaced == 1
    assert marker.exists() and got == [i + 7 for i in ITEMS]


def test_pool_settings_are_checked_and_the_cli_options_map_to_them():
    with pytest.raises(SteerEnvsError, match="unknown pool kind"):
        PoolConfig("fibers")
    with pytest.raises(SteerEnvsError, match="local pool runs in this process"):
        PoolConfig("local", workers=2)
    with pytest.raises(SteerEnvsError, match="only used by the ray pool"):
        PoolConfig("processes", 2, ray_address="10.0.0.1:6379")
    with pytest.raises(SteerEnvsError, match="cpus_per_worker"):
        PoolConfig("ray", 2, cpus_per_worker=0)
    parser = argparse.ArgumentParser()
    add_pool_arguments(parser)

    def config(*argv):
        return pool_config_from_args(parser.parse_args(list(argv)))

    assert config() == PoolConfig("auto", 1)
    assert config("--pool", "local") == PoolConfig("local", 1)
    assert config("--workers", "2") == PoolConfig("processes", 2)
    assert config("--ray") == PoolConfig("ray", 0)
    assert config("--ray-address", "ray://head:10001", "--workers", "8") == PoolConfig("ray", 8, "ray://head:10001")
    assert config("--ray", "--worker-cpus", "0.25").cpus_per_worker == 0.25
    with pytest.raises(SteerEnvsError, match="contradict"):
        config("--ray", "--pool", "processes")


def test_the_env_step_meter_counts_work_in_worker_processes_as_here():
    """A budget is env steps whatever pool ran them: workers report each item's steps to the parent's meter."""
    from steer_envs.meter import env_steps

    env, _, requests = bank_and_requests(n_states=3, G=2, N=2)
    before = env_steps()
    measure_states(env, requests, "text")
    here = env_steps() - before
    with make_pool(PoolConfig("processes", 2)) as pool:
        before = env_steps()
        measure_states(env, requests, "text", pool=pool)
        remote = env_steps() - before
    assert here > len(requests) * 2 * 2 and remote == here


@pytest.mark.slow
def test_q_labels_are_identical_with_two_processes_and_a_killed_worker(monkeypatch, tmp_path):
    env, _, requests = bank_and_requests()
    local = labels(measure_states(env, requests, "text"))
    assert any(q != local[0] for q in local)  # the states really differ
    kill_once(monkeypatch, tmp_path, after_items=2)
    with make_pool(PoolConfig("processes", 2)) as pool:
        remote = labels(measure_states(env, requests, "text", pool=pool))
        assert pool.replaced == 1
    assert remote == local


@pytest.mark.slow
def test_training_losses_are_identical_with_two_processes(tmp_path):
    local = SteeringTrainer(SteeringConfig(**TINY_TRAINING), tmp_path / "local").run().log
    pooled = (
        SteeringTrainer(SteeringConfig(**TINY_TRAINING), tmp_path / "pooled", pool=PoolConfig("processes", 2)).run().log
    )
    keys = ("loss", "loss_grpo", "loss_rank", "mean_q", "rollouts", "adv_mean", "rank_pairs")
    assert [[r[k] for k in keys] for r in pooled] == [[r[k] for k in keys] for r in local]


@pytest.mark.slow
def test_evaluation_records_are_identical_with_two_processes(tmp_path, monkeypatch):
    config = EvalConfig(benchmarks=("nq", "hotpotqa"), split="dev", seeds=2, limit=3)
    runs = {}
    for name, pool in [("local", None), ("processes", PoolConfig("processes", 2))]:
        folder = RunFolder(tmp_path / name, config)
        runs[name] = [
            records_without_time(evaluate(folder, spec, progress=False, pool=pool, log=lambda _: None).records)
            for spec in ("random:p=0.3", "no_supervision")
        ]
    assert runs["processes"] == runs["local"]
    assert len(runs["local"][0]) == 12 and any(r["interventions"] for r in runs["local"][0])


@pytest.mark.slow
def test_filtered_bc_labels_are_identical_with_two_processes():
    from baselines.filtered_bc import collect
    from baselines.registry import MethodContext
    from steer_envs.wrappers import TextFeaturizer

    results = []
    for pool in (None, PoolConfig("processes", 2)):
        context = MethodContext(benchmarks=("nq",), progress=False, pool=pool)
        examples, stats = collect(
            context,
            tasks=4,
            n_rollouts=2,
            propose=0.6,
            margin=0.0,
            seed=3,
            featurizer=TextFeaturizer(buckets=32, max_turns=10),
        )
        results.append(([e.label for e in examples], [e.features.tolist() for e in examples], stats))
    assert results[0] == results[1]
    assert results[0][2]["proposed"] > 0
