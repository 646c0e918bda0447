"""Load test of the retrieval server: N concurrent clients, each sending M Search-R1 requests over keep-alive.

Run: ``python -m perf.retrieval_load [--clients 8] [--requests 200] [--topk 3] [--url URL]``. Without
``--url`` it starts ``steer-envs``' server (bm25s over the shared corpus) on a free loopback port in-process,
loads it, and prints a markdown table with error count, p50/p99 latency and throughput. The run is bounded: a
fixed number of requests per client and a wall-clock deadline, so it always stops by itself.
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlparse


@dataclass
class LoadReport:
    clients: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float] = field(repr=False, default_factory=list)
    error_samples: list[str] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]

    @property
    def p50_ms(self) -> float:
        return self.percentile(50)

    @property
    def p99_ms(self) -> float:
        return self.percentile(99)

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def to_markdown(self) -> str:
        return "\n".join(
            [
                "| clients | requests | errors | p50 ms | p99 ms | requests/s |",
                "| ---: | ---: | ---: | ---: | ---: | ---: |",
                f"| {self.clients} | {self.requests} | {self.errors} | {self.p50_ms:.2f} | {self.p99_ms:.2f} "
                f"| {self.throughput:.0f} |",
            ]
        )


def run_load(
    url: str,
    queries: Sequence[str],
    clients: int = 8,
    requests_per_client: int = 200,
    topk: int = 3,
    timeout: float = 10.0,
    deadline_s: float = 300.0,
    duration_s: float | None = None,
    headers: dict[str, str] | None = None,
) -> LoadReport:
    """Send ``clients × requests_per_client`` POST /retrieve requests (one query each, Search-R1's body).

    With ``duration_s`` (a soak), each client keeps sending until that many seconds have passed (at most
    ``requests_per_client``), and stopping at the end is not an error."""
    parsed = urlparse(url)
    send_headers = {"Content-Type": "application/json", **(headers or {})}
    soak_until = None if duration_s is None else time.perf_counter() + duration_s
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    stop_at = time.perf_counter() + deadline_s

    def client(index: int) -> None:
        conn = http.client.HTTPConnection(parsed.netloc, timeout=timeout)
        mine: list[float] = []
        for i in range(requests_per_client):
            if soak_until is not None and time.perf_counter() > soak_until:
                break
            if time.perf_counter() > stop_at:
                with lock:
                    errors.append("deadline reached")
                break
            query = queries[(index * requests_per_client + i) % len(queries)]
            body = json.dumps({"queries": [query], "topk": topk, "return_scores": True})
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/retrieve", body=body, headers=send_headers)
                response = conn.getresponse()
                data = response.read()
                ok = response.status == 200 and len(json.loads(data)["result"]) == 1
                problem = "" if ok else f"HTTP {response.status}: {data[:120]!r}"
            except Exception as exc:  # counted, reported, and the connection is rebuilt
                problem = f"{type(exc).__name__}: {exc}"
                conn.close()
                conn = http.client.HTTPConnection(parsed.netloc, timeout=timeout)
            if problem:
                with lock:
                    errors.append(problem)
            else:
                mine.append(1000 * (time.perf_counter() - t0))
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(deadline_s + timeout + 5)
    seconds = time.perf_counter() - start
    return LoadReport(clients, len(latencies) + len(errors), len(errors), seconds, latencies, errors[:5])


def main(argv: Sequence[str] | None = None) -> int:
    from steer_envs.cli.common import add_data_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200, help="requests per client")
    parser.add_argument("--topk", type=int, default=3)
    parser.add_argument("--url", default=None, help="load an already running server instead of starting one")
    parser.add_argument("--backend", default="bm25s", help="retriever spec of the in-process server")
    add_data_dir(parser)
    args = parser.parse_args(argv)

    from steer_envs.data import load_tasks

    queries = [t.question for t in load_tasks(split="test", data_dir=args.data_dir)]
    server = None
    url = args.url
    if url is None:
        from steer_envs.retrieval import make_retriever
        from steer_envs.retrieval.registry import RetrieverContext
        from steer_envs.retrieval.server import ServerConfig, start_server

        retriever = make_retriever(args.backend, data_dir=args.data_dir)
        corpus = RetrieverContext(None, args.data_dir).corpus()
        server, _ = start_server(retriever, corpus, ServerConfig(port=0))
        url = server.url
    try:
        report = run_load(url, queries, args.clients, args.requests, args.topk)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    print(f"retrieval server load test against {url} ({args.backend if args.url is None else 'external'})\n")
    print(report.to_markdown())
    if report.error_samples:
        print("\nerrors, first few:", *report.error_samples, sep="\n  ")
    return 1 if report.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
