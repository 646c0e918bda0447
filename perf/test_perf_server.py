"""The retrieval server under 8 concurrent clients: today's http.server implementation (checked out from git) and
the FastAPI + uvicorn server with and without dynamic batching, side by side in one run (pytest-benchmark; run
through ``python -m perf.suite``)."""

from __future__ import annotations

from perf.perf_scale import current
from perf.retrieval_servers import BASELINE_COMMIT, run_comparison

CLIENTS = 8


def test_retrieval_server_throughput(benchmark):
    scale = current()
    figures, table = benchmark.pedantic(
        run_comparison,
        kwargs=dict(clients=CLIENTS, requests=scale.server_requests, rounds=scale.server_rounds),
        rounds=1,
        iterations=1,
    )
    benchmark.extra_info["table"] = table
    benchmark.extra_info.update(
        clients=CLIENTS,
        requests_per_client=scale.server_requests,
        rounds=scale.server_rounds,
        baseline_commit=BASELINE_COMMIT,
    )
    benchmark.extra_info["servers"] = [
        {
            "name": f.name,
            "requests_per_s": f.median("throughput"),
            "p50_ms": f.median("p50_ms"),
            "p99_ms": f.median("p99_ms"),
            "errors": f.errors,
        }
        for f in figures
    ]
    assert all(f.errors == 0 for f in figures)
