"""Real Ray check: env states travel between processes and continue identically in remote workers.

Researchers scale counterfactual rollouts out with Ray; what must hold is that an episode snapshot taken here
(``get_state``) resumes in a Ray worker exactly as a local ``fork`` does.
"""

import os

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401

ray = pytest.importorskip("ray", reason="install the 'ray' extra")

from steer_envs.rollouts.ray_pool import LOCAL_RAY_SYSTEM_CONFIG  # noqa: E402

ENV_ID = "steer_envs/SearchSteering-v0"
KWARGS = dict(executor="sim:default", split="dev", benchmarks=["hotpotqa", "nq"], action_mode="discrete")


def _continue(state, seed, actions):
    """Rebuild the env, restore the snapshot, re-seed like fork(seed) and play ``actions`` to the end."""
    import gymnasium as gym

    env = gym.make(ENV_ID, **KWARGS).unwrapped
    env.set_state(state)
    env = env.fork(seed=seed)
    total, i = 0.0, 0
    while True:
        _, reward, terminated, truncated, info = env.step(actions[i % len(actions)])
        total += reward
        i += 1
        if terminated or truncated:
            return total, info["executor_turns"], info["interventions"], info["answer"]


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory):
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    temp = tmp_path_factory.mktemp("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _temp_dir=str(temp),
        log_to_driver=False,
        runtime_env={"env_vars": {k: v for k, v in os.environ.items() if k.startswith("STEER_ENVS_")}},
        _system_config=LOCAL_RAY_SYSTEM_CONFIG,  # workers at normal priority, as the pool's own local Ray
    )
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_remote_continuations_match_local_forks(ray_local):
    env = gym.make(ENV_ID, **KWARGS).unwrapped
    env.reset(seed=7)
    env.step(0)  # one executor turn, then snapshot
    state = env.get_state()
    actions = [4, 0, 0, 1]
    local = [_continue(state, seed, actions) for seed in range(4)]
    # each task's worker exits after its call: an idle worker keeps an env and torch (~0.6 GB), which the suite's
    # memory budget would count beside the pool's actors in the next tests
    remote_fn = ray_local.remote(max_calls=1)(_continue)
    remote = ray_local.get([remote_fn.remote(state, seed, actions) for seed in range(4)])
    assert remote == local
    assert len({r[3] for r in local}) >= 1  # the continuations ran to an answer (or the budget)


# -- the rollout pool on Ray: the same results as the local loop -------------------------------------------------
@pytest.fixture(scope="module")
def ray_pool(ray_local):
    from steer_envs.rollouts import PoolConfig, make_pool

    with make_pool(PoolConfig("ray", workers=2)) as pool:
        yield pool


@pytest.mark.slow
def test_ray_pool_q_labels_match_local_with_a_killed_actor(ray_pool, tmp_path):
    from agents.steering.rollouts import measure_states
    from steer_envs.rollouts import KILL_ONCE_ENV
    from tests.rollouts.support import bank_and_requests, labels

    env, _, requests = bank_and_requests()
    local = labels(measure_states(env, requests, "text"))
    assert labels(measure_states(env, requests, "text", pool=ray_pool)) == local
    # fresh actors carrying the fault injection: one SIGKILLs itself on its 2nd item; Ray restarts it and retries
    # the item (the CPUs of the earlier actors are released first: 2 CPUs, 1 per actor)
    marker = tmp_path / "killed"
    ray_pool.close()
    os.environ[KILL_ONCE_ENV] = f"2:{marker}"
    try:
        pids_before = set(ray_pool.actor_pids())
        got = labels(measure_states(env, requests, "text", pool=ray_pool))
        pids_after = set(ray_pool.actor_pids())
    finally:
        ray_pool.close()  # the next test gets actors without the fault
        del os.environ[KILL_ONCE_ENV]
    assert marker.exists() and pids_after != pids_before  # an actor really died and was replaced
    assert got == local


@pytest.mark.slow
def test_ray_pool_training_losses_and_eval_records_match_local(ray_pool, tmp_path):
    from agents.steering.config import SteeringConfig
    from agents.steering.trainer import SteeringTrainer
    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate
    from tests.rollouts.support import TINY_TRAINING, records_without_time

    keys = ("loss", "loss_grpo", "loss_rank", "mean_q", "rollouts")
    local = SteeringTrainer(SteeringConfig(**TINY_TRAINING), tmp_path / "local").run().log
    remote = SteeringTrainer(SteeringConfig(**TINY_TRAINING), tmp_path / "ray", pool=ray_pool).run().log
    assert [[r[k] for k in keys] for r in remote] == [[r[k] for k in keys] for r in local]
    config = EvalConfig(benchmarks=("nq",), split="dev", seeds=2, limit=3)
    records = {}
    for name, pool in [("local", None), ("ray", ray_pool)]:
        folder = RunFolder(tmp_path / f"eval_{name}", config)
        records[name] = records_without_time(
            evaluate(folder, "random:p=0.3", progress=False, pool=pool, log=lambda _: None).records
        )
    assert records["ray"] == records["local"] and len(records["local"]) == 6
