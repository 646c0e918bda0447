"""The openai: backend's transport (steer_envs.httpio.KeepAlivePool) against a real loopback server: one kept-alive
connection serves a sequence of requests, and ``max_in_flight`` bounds the requests in flight over all threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from steer_envs.errors import SteerEnvsError
from steer_envs.llm import GenerationConfig, make_backend
from tests.servers.latency_server import LatencyServer

CONFIG = GenerationConfig(max_new_tokens=8, stop=("</search>",))


def test_sequential_requests_reuse_one_connection():
    with LatencyServer(0.0) as server:
        backend = make_backend(server.spec, shared=False)
        texts = [backend.generate([f"question {i}"], CONFIG)[0].text for i in range(20)]
        counts = server.counters()
    assert all("<search>" in t for t in texts)
    assert counts["requests"] == 20 and counts["connections"] == 1 and backend.http.opened == 1


def test_max_in_flight_bounds_requests_over_all_threads():
    with LatencyServer(0.05) as server:
        backend = make_backend(server.spec, shared=False, max_in_flight=3)
        with ThreadPoolExecutor(12) as threads:
            list(threads.map(lambda i: backend.generate([f"q{i}"], CONFIG), range(24)))
        counts = server.counters()
    assert counts["requests"] == 24 and counts["peak_in_flight"] == 3 and backend.http.peak_in_flight == 3
    assert counts["connections"] <= 3 and backend.http.opened <= 3


def test_max_in_flight_must_be_positive():
    with pytest.raises(SteerEnvsError, match="max_in_flight >= 1"):
        make_backend("openai:m@http://127.0.0.1:9", shared=False, max_in_flight=0)
