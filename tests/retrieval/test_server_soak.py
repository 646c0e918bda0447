"""A bounded soak of the retrieval server: 8 concurrent clients on loopback for a fixed time against the
real ``serve-retriever`` process (bm25s over the shared corpus). No request may fail, and the server's resident
memory may grow by at most :data:`GROWTH_BOUND_MIB` between the end of the warm-up and the end of the soak (about
10k requests at the ~500 requests/s measured here: a leak of 5 KB per request would cross it; measured: 1 MiB)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perf.retrieval_load import run_load
from steer_envs.data import load_tasks

SOAK_SECONDS = 20.0
CLIENTS = 8
GROWTH_BOUND_MIB = 48.0


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads resident memory from /proc (Linux)")
def test_soak_has_no_errors_and_bounded_memory_growth(shared_data_dir):
    queries = [t.question for t in load_tasks(split="test", data_dir=shared_data_dir)]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "steer_envs.cli.main",
            "serve-retriever",
            "--port",
            "0",
            "--data-dir",
            str(shared_data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        url = re.search(r"at (http://127\.0\.0\.1:\d+)", proc.stdout.readline()).group(1)
        warm = run_load(url, queries, CLIENTS, 60)
        assert warm.errors == 0, warm.error_samples
        before = rss_mib(proc.pid)
        soak = run_load(url, queries[::-1], CLIENTS, 10**6, duration_s=SOAK_SECONDS, deadline_s=SOAK_SECONDS + 30)
        after = rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(15)
    print(
        f"\nsoak: {soak.requests} requests in {soak.seconds:.1f} s ({soak.throughput:.0f}/s), "
        f"p50 {soak.p50_ms:.1f} ms, "
        f"p99 {soak.p99_ms:.1f} ms, {soak.errors} errors; server RSS {before:.0f} -> {after:.0f} MiB"
    )
    assert soak.errors == 0, soak.error_samples
    assert soak.requests >= 20 * CLIENTS  # it really ran under load the whole time
    assert after - before <= GROWTH_BOUND_MIB
