"""The loopback latency server's lognormal latency: the mean and coefficient of variation asked for, the same
draws for the same seed, fixed latency unchanged at cv 0; and the server (in a thread and in its own process)
answering under it."""

from __future__ import annotations

import statistics

import pytest

from steer_envs.llm import GenerationConfig, make_backend
from tests.servers.latency_server import Latency, LatencyServer, LatencyServerProcess
from tests.timing import wall_seconds_under


def test_lognormal_draws_have_the_asked_mean_and_cv_and_follow_the_seed():
    draw = Latency(1.0, cv=1.0, seed=3).sampler()
    values = [draw() for _ in range(40_000)]
    mean = statistics.fmean(values)
    assert mean == pytest.approx(1.0, rel=0.05)
    assert statistics.pstdev(values) / mean == pytest.approx(1.0, rel=0.1)
    assert max(values) / min(values) > 100  # an order of magnitude and more between requests
    again = Latency(1.0, cv=1.0, seed=3).sampler()
    other = Latency(1.0, cv=1.0, seed=4).sampler()
    assert [again() for _ in range(5)] == values[:5] != [other() for _ in range(5)]


def test_cv_zero_keeps_the_fixed_latency_and_bad_settings_are_refused():
    draw = Latency(0.1).sampler()
    assert {draw() for _ in range(10)} == {0.1}
    for mean, cv in ((-1.0, 0.0), (0.1, -0.5)):
        with pytest.raises(ValueError):
            Latency(mean, cv)


def _answer_once(spec: str) -> str:
    backend = make_backend(spec, shared=False, max_retries=0, timeout=10)
    try:
        return backend.generate(["Question?"], GenerationConfig(max_new_tokens=8))[0].text
    finally:
        backend.close()


def test_a_lognormal_server_answers_in_a_thread_and_in_its_own_process():
    with LatencyServer(0.02, cv=1.0, seed=1) as server:
        with wall_seconds_under(10, typical_s=0.1):  # 5 answers of 20 ms mean latency
            for _ in range(5):
                assert "<search>" in _answer_once(server.spec)
        assert server.counters()["requests"] == 5
    with LatencyServerProcess(0.02, reply="answer", cv=1.0, seed=1) as process:
        assert "<answer>" in _answer_once(process.spec)
        assert process.counters()["requests"] == 1


def test_the_process_server_counts_requests_in_flight_and_answers_chat_too():
    """The process mode runs on one event loop: concurrent requests overlap there, keep-alive connections are
    reused, and both completion paths answer."""
    with LatencyServerProcess(0.2, reply="answer") as process:
        backend = make_backend(process.spec, shared=False, max_in_flight=8, concurrency=8, max_retries=0)
        try:
            texts = [
                g.text
                for g in backend.generate([f"Question {i}?" for i in range(8)], GenerationConfig(max_new_tokens=8))
            ]
            chat = backend.generate_chat([[{"role": "user", "content": "Question?"}]], GenerationConfig())[0].text
        finally:
            backend.close()
        counts = process.counters(reset=True)
        assert process.counters()["requests"] == 0  # reset
    assert all("<answer>" in t for t in texts) and "<answer>" in chat
    # at most one connection per request in flight, and the stats request's own
    assert counts["requests"] == 9 and counts["peak_in_flight"] == 8 and counts["connections"] <= 8 + 1
