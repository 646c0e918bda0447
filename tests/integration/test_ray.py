"""Real Ray check: env states travel between processes and continue identically in remote workers.

Researchers scale counterfactual rollouts out with Ray; what must hold is that an episode snapshot taken here
(``get_state``) resumes in a Ray worker exactly as a local ``fork`` does.
"""
import os

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401

ray = pytest.importorskip("ray", reason="install the 'ray' extra")

ENV_ID = "steer_envs/SearchSteering-v0"
KWARGS = dict(executor="sim:default", split="dev", benchmarks=["hotpotqa", "nq"], action_mode="discrete")


def _continue(state, seed, actions):
    """Rebuild the env, restore the snapshot, re-seed like fork(seed) and play ``actions`` to the end."""
    import gymnasium as gym

    import steer_envs  # noqa: F401

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
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(temp), log_to_driver=False,
             runtime_env={"env_vars": {k: v for k, v in os.environ.items() if k.startswith("STEER_ENVS_")}})
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
    remote_fn = ray_local.remote(_continue)
    remote = ray_local.get([remote_fn.remote(state, seed, actions) for seed in range(4)])
    assert remote == local
    assert len({r[3] for r in local}) >= 1  # the continuations ran to an answer (or the budget)
