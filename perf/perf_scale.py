"""How big the performance suite's workloads are: ``quick`` (minutes, the default) or ``full`` (the figures of
BENCHMARKS.md's acceptance rows: the steering trainer at its acceptance config takes ~20 minutes alone).
Set by ``python -m perf.suite --full`` through :data:`SCALE_ENV`."""

from __future__ import annotations

import os
from dataclasses import dataclass

SCALE_ENV = "STEER_ENVS_BENCH_SCALE"


@dataclass(frozen=True)
class Scale:
    name: str
    label_states: int  # bank states labelled per pool (q(s) throughput)
    vec_steps: int  # vector steps per make_vec figure
    server_requests: int  # requests per client per round (server comparison)
    server_rounds: int
    trainer_config: dict  # SteeringConfig overrides for the trainer wall time ({} = the acceptance config)
    engine_episodes: int  # nq test episodes of the eval against vLLM (each run: eval, replay, eval again)
    engine_eager: bool  # vLLM without graph compilation: ready in about a minute instead of several


SCALES = {
    "quick": Scale(
        "quick",
        label_states=48,
        vec_steps=800,
        server_requests=100,
        server_rounds=3,
        trainer_config=dict(m=3, k=32, bank_tasks=120),
        engine_episodes=400,
        engine_eager=True,
    ),
    "full": Scale(
        "full",
        label_states=96,
        vec_steps=4000,
        server_requests=250,
        server_rounds=5,
        trainer_config={},
        engine_episodes=640,
        engine_eager=False,
    ),
}


def current() -> Scale:
    name = os.environ.get(SCALE_ENV, "quick")
    if name not in SCALES:
        raise ValueError(f"{SCALE_ENV}={name!r}; valid: {', '.join(SCALES)}")
    return SCALES[name]
