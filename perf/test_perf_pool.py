"""Rollout pool throughput (pytest-benchmark; run through ``python -m perf.suite``).

* q(s) labelling: bank states per minute at G=4, N=16 (the trainer's round-0 slow samples, then the
  continuations) on the local pool and on the processes and Ray pools with 1 and 2 workers; pool start-up and the
  workers' env builds are excluded (a warm-up call first), the labels must equal the local ones;
* the steering trainer's wall time with the local pool and with 2 worker processes (acceptance config with
  ``--full``).
"""

from __future__ import annotations

import os
import time

import pytest
import torch

from agents.steering.config import SteeringConfig
from agents.steering.encoder import EncoderSteerer
from agents.steering.interventions import options_from_catalogue
from agents.steering.rollouts import collect_state_bank, continuation_seeds, make_steering_env, measure_states
from agents.steering.trainer import SteeringTrainer
from perf.perf_scale import current
from steer_envs.rollouts import PoolConfig, make_pool

G, N = 4, 16
POOLS = [("local", 1), ("processes", 1), ("processes", 2), ("ray", 1), ("ray", 2)]


@pytest.fixture(scope="module")
def labelling_work():
    torch.set_num_threads(1)
    env = make_steering_env("sim:default", "train", action_mode="text")
    tasks = [t.id for t in env.unwrapped.tasks[:: max(1, len(env.unwrapped.tasks) // 200)]][:200]
    bank = collect_state_bank(env, tasks, seed=11, action_mode="text")
    states = bank[: current().label_states]
    steerer = EncoderSteerer(options_from_catalogue(env.unwrapped.catalogue))
    generator = torch.Generator().manual_seed(0)
    requests = [
        (
            s,
            [x.to_action("text") for x in steerer.sample_slow(s.observation, G, generator)],
            continuation_seeds([0, 0, i], N),
        )
        for i, s in enumerate(states)
    ]
    reference = [(m.baseline, m.returns) for m in measure_states(env, requests[:4], "text")]
    return env, requests, reference


@pytest.fixture(scope="module")
def ray_session(tmp_path_factory):
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=str(tmp_path_factory.mktemp("ray")))
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("kind,workers", POOLS, ids=[f"{k}-{w}" for k, w in POOLS])
def test_q_labelling_throughput(benchmark, labelling_work, request, kind, workers):
    if kind == "ray":
        request.getfixturevalue("ray_session")
    env, requests, reference = labelling_work
    with make_pool(PoolConfig(kind, workers)) as pool:
        warm = measure_states(env, requests[:4], "text", pool=pool)  # start workers, build their envs
        assert [(m.baseline, m.returns) for m in warm] == reference
        start = time.perf_counter()
        result = benchmark.pedantic(
            measure_states, args=(env, requests, "text"), kwargs={"pool": pool}, rounds=1, iterations=1
        )
        seconds = time.perf_counter() - start
    rollouts = sum(m.rollouts for m in result)
    benchmark.extra_info.update(
        {
            "pool": kind,
            "workers": workers,
            "states": len(requests),
            "G": G,
            "N": N,
            "rollouts": rollouts,
            "seconds": seconds,
            "states_per_minute": 60 * len(requests) / seconds,
        }
    )


@pytest.mark.parametrize("kind,workers", [("local", 1), ("processes", 2)], ids=["local-1", "processes-2"])
def test_trainer_wall_time(benchmark, tmp_path, kind, workers):
    overrides = current().trainer_config
    config = SteeringConfig(**overrides)
    start = time.perf_counter()
    result = benchmark.pedantic(
        lambda: SteeringTrainer(config, tmp_path / "run", pool=PoolConfig(kind, workers)).run(), rounds=1, iterations=1
    )
    benchmark.extra_info.update(
        {
            "pool": kind,
            "workers": workers,
            "seconds": time.perf_counter() - start,
            "config": overrides or "acceptance (SteeringConfig defaults)",
            "last_loss": result.log[-1]["loss"],
            "rounds": result.rounds,
        }
    )
