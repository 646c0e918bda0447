"""The concurrent pools keep as many episodes in flight as the model backend allows (``max_in_flight``, 64 by
default), not a fixed worker count: evaluation episodes, the state bank's rollouts and the counterfactual
continuations all reach a loopback server with far more than 16 requests at once."""

from __future__ import annotations

import pytest

from agents.steering.rollouts import collect_state_bank, make_steering_env, measure_states
from steer_envs.rollouts import PoolConfig, in_flight_of, make_pool
from steer_envs.rollouts.threads import FALLBACK_THREADS
from tests.servers.latency_server import LatencyServer

from .support import evaluate_against_a_latency_server

#: seconds the stand-in server takes per request: long enough that 64 items building their replicas overlap
LATENCY = 0.4
#: more than the old fixed 16 threads could hold, the episodes being at least 64
MORE_THAN_FIXED = 16


def test_the_in_flight_bound_comes_from_the_executor_spec():
    url = "openai:m@http://127.0.0.1:9/v1"
    assert in_flight_of(url) == 64
    assert in_flight_of(url + "?temperature=0&max_in_flight=7") == 7
    for other in (None, "", "sim:default", "hf:gemma-3-270m", "nonsense"):
        assert in_flight_of(other) is None
    with make_pool(PoolConfig("threads", 0)) as pool:  # --pool threads without --workers: sized by the first job
        assert pool.workers == FALLBACK_THREADS


@pytest.mark.slow
def test_evaluation_keeps_more_than_16_episodes_in_flight(tmp_path):
    outcome, counts = evaluate_against_a_latency_server(tmp_path / "run", LATENCY, 64)
    assert outcome.ran == 64 and all(r.failure is None for r in outcome.records)
    assert counts["peak_in_flight"] > MORE_THAN_FIXED, counts
    assert counts["peak_in_flight"] <= 64  # the backend's bound holds


@pytest.mark.slow
def test_the_state_bank_and_the_continuations_keep_more_than_16_in_flight():
    with LatencyServer(LATENCY) as server:
        env = make_steering_env(server.spec, "train", benchmarks=["nq"], action_mode="text", max_turns=3)
        try:
            tasks = [t.id for t in env.unwrapped.tasks[:64]]
            bank = collect_state_bank(env, tasks, seed=3, action_mode="text", pool=PoolConfig("auto"))
            bank_counts = server.counters(reset=True)
            first_turns = [state for state in bank if state.turn == 0]
            requests = [(state, ["Verify the answer against the passages"], [11]) for state in first_turns]
            measured = measure_states(env, requests, "text", pool=PoolConfig("auto"))
            continuation_counts = server.counters()
        finally:
            env.close()
    assert len(first_turns) == 64 and len(measured) == 64 and all(m.rollouts > 0 for m in measured)
    assert MORE_THAN_FIXED < bank_counts["peak_in_flight"] <= 64, bank_counts
    assert MORE_THAN_FIXED < continuation_counts["peak_in_flight"] <= 64, continuation_counts
