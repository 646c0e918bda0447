"""Performance of SearchSteering-v0 on sim:default (pytest-benchmark).

Run: ``pytest perf/test_perf_env.py --benchmark-enable -q`` (``--benchmark-disable``, the default in
pyproject, runs each once as a smoke test).

* steps/s with a pass policy, with the simulator's retrieval cache off (every search hits BM25) and on;
* the share of step time spent inside the retriever, and what a step costs outside it: the simulator and the env
  together must stay under 0.5 ms a step with the cache off (an absolute budget: a share target would fail whenever
  BM25 itself got faster);
* fork cost at executor turn 1 and turn 20: must not grow with the transcript by more than 2x.
"""

from __future__ import annotations

import json
import time

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401
from steer_envs.executors.sim import PROFILE_DIR
from steer_envs.ids import STEERING_ENV
from steer_envs.retrieval import cache as retrieval_cache

STEPS = 300
ROUNDS = 3
#: with the cache off, a step may cost at most this many milliseconds outside the BM25 searches (simulator + env)
OVERHEAD_MS_TARGET = 0.5
#: a fork at turn 20 may cost at most this many times a fork at turn 1
FORK_GROWTH_LIMIT = 2.0


def _pass_steps(env, n: int, seed: int = 0) -> int:
    env.reset(seed=seed)
    episodes = 0
    for _ in range(n):
        _, _, term, trunc, _ = env.step(0)
        if term or trunc:
            episodes += 1
            env.reset()
    return episodes


@pytest.fixture(scope="module")
def env():
    e = gym.make(STEERING_ENV, split="test")
    _pass_steps(e, 20)  # load index, corpus and tasks
    return e


@pytest.mark.parametrize("cache", [False, True], ids=["cache_off", "cache_on"])
def test_env_steps_per_second_pass_policy(benchmark, env, cache):
    retrieval_cache.set_enabled(cache)
    try:
        stats = retrieval_cache.STATS
        stats.reset()
        start = time.perf_counter()
        benchmark.pedantic(_pass_steps, args=(env, STEPS), rounds=ROUNDS, iterations=1)
        elapsed = time.perf_counter() - start
        steps = ROUNDS * STEPS
        share = stats.seconds / elapsed
        overhead_ms = 1000 * (elapsed - stats.seconds) / (ROUNDS * STEPS)
        benchmark.extra_info.update(
            {
                "steps_per_second": steps / elapsed,
                "retrieval_share": share,
                "searches": stats.misses,
                "ms_per_step": 1000 * elapsed / steps,
                "ms_per_search": 1000 * stats.seconds / max(stats.misses, 1),
                "rounds": ROUNDS,
                "steps_per_round": STEPS,
                "cache": cache,
                "overhead_ms_per_step": overhead_ms,
                "target_overhead_ms": None if cache else OVERHEAD_MS_TARGET,
            }
        )
        print(
            f"\ncache={'on' if cache else 'off'}: {steps / elapsed:.0f} steps/s, {1000 * elapsed / steps:.2f} ms/step, "
            f"retrieval {share:.0%} of step time ({stats.misses} BM25 searches, "
            f"{1000 * stats.seconds / max(stats.misses, 1):.2f} ms each)"
        )
        if not cache:
            assert overhead_ms <= OVERHEAD_MS_TARGET, f"the simulator and env cost {overhead_ms:.3f} ms a step"
    finally:
        retrieval_cache.set_enabled(True)


@pytest.fixture(scope="module")
def long_env(tmp_path_factory):
    """An executor that never finds its evidence and never gives up: 40 turns of growing transcript."""
    profile = json.loads((PROFILE_DIR / "default.json").read_text())
    profile.update(
        name="persistent",
        recognize_skill=0.0,
        premature_rate=0.0,
        never_answer_rate=0.0,
        hazard_base=0.0,
        hazard_growth=0.0,
        benchmarks={},
    )
    path = tmp_path_factory.mktemp("profiles") / "persistent.json"
    path.write_text(json.dumps(profile))
    return gym.make(
        STEERING_ENV, split="test", executor=f"sim:{path}", max_turns=40, max_transcript_chars=200_000
    ).unwrapped


def _env_at_turn(env, turn: int):
    env.reset(seed=0)
    for _ in range(turn):
        env.step(0)
    assert env.executor.stats.turns == turn and not env.executor.done
    return env


def _fork_seconds(env, reps: int = 300) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        env.fork()
    return (time.perf_counter() - start) / reps


@pytest.mark.parametrize("turn", [1, 20])
def test_fork_cost(benchmark, long_env, turn):
    _env_at_turn(long_env, turn)
    benchmark(long_env.fork)
    benchmark.extra_info["turn"] = turn
    benchmark.extra_info["transcript_chars"] = len(long_env.executor.transcript)
    benchmark.extra_info["fork_us"] = 1e6 * _fork_seconds(long_env)
    benchmark.extra_info["growth_limit"] = FORK_GROWTH_LIMIT


def test_fork_cost_does_not_grow_with_the_transcript(long_env):
    early = min(_fork_seconds(_env_at_turn(long_env, 1)) for _ in range(3))
    chars_early = len(long_env.executor.transcript)
    late = min(_fork_seconds(_env_at_turn(long_env, 20)) for _ in range(3))
    chars_late = len(long_env.executor.transcript)
    print(
        f"\nfork: turn 1 {1e6 * early:.0f} us ({chars_early} chars), turn 20 {1e6 * late:.0f} us ({chars_late} chars), "
        f"ratio {late / early:.2f}"
    )
    assert chars_late > 10 * chars_early
    assert late <= FORK_GROWTH_LIMIT * early
