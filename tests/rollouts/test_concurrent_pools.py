"""The ``greenlets`` and ``threads`` pools: the same results as the local pool in item order (a toy job, q(s)
labels, evaluation records on the deterministic simulator), failures reported with the item; the ``auto`` pool (the
command line's default) becomes a greenlets pool for an I/O-bound executor whose waits yield (openai:), whose
evaluation episodes then reach a real loopback server concurrently, and a threads pool for one whose waits block."""

from __future__ import annotations

import threading

import pytest

from agents.steering.rollouts import measure_states
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate
from steer_envs import cooperative
from steer_envs.meter import env_steps
from steer_envs.rollouts import Job, LocalPool, PoolConfig, PoolError, concurrent_pool, make_pool
from tests.servers.latency_server import LatencyServer

from .support import (
    Offset,
    add_after_a_nap,
    bank_and_requests,
    evaluate_against_a_latency_server,
    labels,
    records_without_time,
)

ITEMS = list(range(30))
CONCURRENT = ("greenlets", "threads")


def add_and_name_the_worker(offset: int, item: int) -> tuple[int, str]:
    """The toy item; as a hub's task it naps through the hub (a served request's wait, in small)."""
    if cooperative.current_hub() is None:
        value, _ = add_after_a_nap(offset, item)
        return value, threading.current_thread().name
    cooperative.sleep((item * 7919 % 13) / 1000)  # items finish out of order
    if item < 0:
        raise ValueError(f"negative item {item}")
    return item + offset, f"task of hub {id(cooperative.current_hub())}"


@pytest.mark.parametrize("kind", CONCURRENT)
def test_concurrent_pools_match_local_in_item_order(kind):
    job = Job(Offset(100), add_and_name_the_worker)
    local = [value for value, _ in make_pool().map(job, ITEMS)]
    with make_pool(PoolConfig(kind, 4)) as pool:
        got = pool.map(job, ITEMS)
        assert [v for v, _ in pool.imap(job, ITEMS)] == local
        with pytest.raises(PoolError, match="(?s)item 3 failed.*ValueError: negative item -1"):
            pool.map(job, [0, 1, 2, -1, 4])
        assert [v for v, _ in pool.map(job, [1, 2])] == [101, 102]  # usable afterwards
    assert [value for value, _ in got] == local == [i + 100 for i in ITEMS]
    names = {name for _, name in got}
    if kind == "threads":
        assert len(names) > 1 and all(name.startswith("steer-rollout") for name in names)
        assert not any(t.name.startswith("steer-rollout") and t.is_alive() for t in threading.enumerate())  # closed
    else:  # every item a task of one hub, on this thread
        assert len(names) == 1 and next(iter(names)).startswith("task of hub")


#: items napping at once in the greenlets pool test, and the most seen
_NAPPING = {"now": 0, "most": 0}


def _nap_item(_: object, item: int) -> int:
    _NAPPING["now"] += 1
    _NAPPING["most"] = max(_NAPPING["most"], _NAPPING["now"])
    cooperative.sleep(0.01)
    _NAPPING["now"] -= 1
    return item


def test_the_greenlets_pool_keeps_its_items_in_flight_together():
    """While one item waits the others run: with 8 in flight, 8 items nap at once (one thread)."""
    with make_pool(PoolConfig("greenlets", 8)) as pool:
        assert pool.map(Job(Offset(0), _nap_item), ITEMS) == ITEMS
    assert _NAPPING["most"] == 8


@pytest.mark.parametrize("kind", CONCURRENT)
def test_q_labels_and_step_counts_are_identical_on_concurrent_pools(kind):
    env, _, requests = bank_and_requests(n_states=4, G=2, N=2)
    before = env_steps()
    local = labels(measure_states(env, requests, "text"))
    here = env_steps() - before
    before = env_steps()
    concurrent = labels(measure_states(env, requests, "text", pool=PoolConfig(kind, 3)))
    assert concurrent == local and env_steps() - before == here > 0


def test_evaluation_records_are_identical_on_concurrent_pools(tmp_path):
    config = EvalConfig(benchmarks=("nq", "hotpotqa"), split="dev", seeds=2, limit=2)
    runs = {}
    for name, pool in [("local", None), *((kind, PoolConfig(kind, 3)) for kind in CONCURRENT)]:
        folder = RunFolder(tmp_path / name, config)
        runs[name] = [
            records_without_time(evaluate(folder, spec, progress=False, pool=pool, log=lambda _: None).records)
            for spec in ("random:p=0.3", "no_supervision")
        ]
    assert runs["threads"] == runs["greenlets"] == runs["local"] and len(runs["local"][0]) == 8


class _BlockingKind:
    """A plugin executor kind whose waits block its thread (its factory says io_bound, not cooperative)."""

    io_bound = True


def test_the_auto_pool_becomes_greenlets_or_threads_for_an_io_bound_executor_only(monkeypatch):
    from steer_envs.executors import registry

    for table in ("IO_BOUND_KINDS", "COOPERATIVE_KINDS"):  # the kind added below leaves no trace after the test
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))
    monkeypatch.setitem(registry.EXECUTORS._factories, "blocking-test-kind", _BlockingKind)
    openai = "openai:m@http://127.0.0.1:9/v1"
    assert concurrent_pool(PoolConfig("auto"), openai) == PoolConfig("greenlets", 64)  # OpenAIOptions.max_in_flight
    spec = openai + "?max_in_flight=200&temperature=0"
    assert concurrent_pool(PoolConfig("auto"), spec) == PoolConfig("greenlets", 200)
    assert concurrent_pool(PoolConfig("auto"), openai, threads=8) == PoolConfig("greenlets", 8)
    assert concurrent_pool(make_pool(PoolConfig("auto")), openai).kind == "greenlets"  # the pool made from it too
    assert concurrent_pool(PoolConfig("auto"), "blocking-test-kind:x", threads=8) == PoolConfig("threads", 8)
    auto = PoolConfig("auto")
    assert concurrent_pool(auto, "sim:default") is auto and make_pool(auto).kind == "local"
    for kept in (None, LocalPool(), PoolConfig("local"), PoolConfig("processes", 2)):
        assert concurrent_pool(kept, openai) is kept


def test_evaluation_on_an_openai_executor_keeps_episodes_in_flight(tmp_path):
    outcome, counts = evaluate_against_a_latency_server(tmp_path / "run", 0.05, 6)
    assert outcome.ran == 6 and all(r.failure is None for r in outcome.records)
    assert counts["requests"] >= 12 and counts["peak_in_flight"] >= 3  # 6 episodes in flight, not one at a time


def test_a_long_lived_threads_pool_keeps_a_bounded_number_of_jobs_per_thread():
    from steer_envs.rollouts.threads import ThreadPool

    with ThreadPool(PoolConfig("threads", 1)) as pool:
        for offset in range(10):  # ten different jobs (a trainer's many rounds), one thread
            assert pool.map(Job(Offset(offset), add_and_name_the_worker), [1])[0][0] == offset + 1
        held = pool._threads.submit(lambda: (len(pool._local.jobs), pool._local.cache.capacity)).result()
    assert held[0] == held[1] == 4  # as many jobs as setups are kept, not one per job ever seen


def test_a_long_lived_greenlets_pool_keeps_the_replicas_of_a_bounded_number_of_jobs():
    from steer_envs.rollouts.greenlets import KEPT_JOBS, GreenletPool

    with GreenletPool(PoolConfig("greenlets", 2)) as pool:
        for offset in range(10):  # ten different jobs (a trainer's many rounds)
            assert pool.map(Job(Offset(offset), add_and_name_the_worker), [1, 2])[0][0] == offset + 1
        assert len(pool._idle) == KEPT_JOBS and all(len(replicas) <= 2 for replicas in pool._idle.values())


def test_a_steering_run_on_an_io_bound_executor_opens_one_greenlets_pool(tmp_path, monkeypatch):
    """The state bank and every round's continuations share one greenlets pool (not a fresh one, its replicas
    rebuilt, per call), an item in flight per request the backend keeps in flight; the run's labels are the local
    pool's."""
    from agents.steering.config import SteeringConfig
    from agents.steering.trainer import SteeringTrainer
    from steer_envs.rollouts.greenlets import GreenletPool as ThreadPool

    opened = []
    real_init = ThreadPool.__init__

    def counting_init(self, *args, **kwargs):
        opened.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(ThreadPool, "__init__", counting_init)
    with LatencyServer(0.0) as server:
        config = SteeringConfig(m=2, k=2, G=2, N=1, bank_tasks=2, benchmarks=["nq"], eps_sel=0.5, executor=server.spec)
        runs = {
            kind: SteeringTrainer(config, tmp_path / kind, pool=PoolConfig(kind)).run().log
            for kind in ("auto", "local")
        }
    assert len(opened) == 1 and opened[0].workers == 64
    keys = ("states", "rollouts", "mean_q")
    assert [[r[k] for k in keys] for r in runs["auto"]] == [[r[k] for k in keys] for r in runs["local"]]
