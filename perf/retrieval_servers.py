"""Today's retrieval server against the current one, side by side in one run (``BENCHMARKS.md``'s server rows).

"Today's server" is the standard-library ``http.server`` implementation as of :data:`BASELINE_COMMIT`, checked out
from git into a temporary folder at benchmark time (``git archive``), so the comparison never depends on a copy
kept in the package. Each server runs in its own process (bm25s over the shared corpus, the same index cache),
the clients run here; rounds alternate between the servers so that load from elsewhere on the machine hits both
alike, and each figure is the median over rounds.

Run: ``python -m perf.retrieval_servers [--clients 8] [--requests 150] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .retrieval_load import LoadReport, run_load

#: the last commit whose retrieval server was the hand-rolled http.server handler
BASELINE_COMMIT = "33d4f7814a16a1d603b687148b4c4a8e65778071"
REPO = Path(__file__).resolve().parents[1]
_SERVE = """
import sys
from steer_envs.retrieval import make_retriever
from steer_envs.retrieval.registry import RetrieverContext
from steer_envs.retrieval.server import ServerConfig, build_server
extra = dict(arg.split("=", 1) for arg in sys.argv[1:])
config = ServerConfig(port=0, **{k: (v == "1" if k == "batching" else float(v)) for k, v in extra.items()})
server = build_server(make_retriever("bm25s"), RetrieverContext().corpus(), config)
print(server.url, flush=True)
server.serve_forever()
"""


@dataclass
class ServerUnderTest:
    """A server process: its name, its ``PYTHONPATH`` root and ServerConfig overrides."""

    name: str
    root: Path
    options: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None
    url: str = ""

    def start(self) -> ServerUnderTest:
        from steer_envs.paths import resolve_data_dir

        env = {**os.environ, "PYTHONPATH": str(self.root), "STEER_ENVS_DATA": str(resolve_data_dir())}
        args = [f"{k}={v}" for k, v in self.options.items()]
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, *args], stdout=subprocess.PIPE, text=True, env=env, cwd=self.root
        )
        line = self.process.stdout.readline().strip()  # type: ignore[union-attr]
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"server {self.name} did not start (printed {line!r})")
        self.url = line
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()


def baseline_checkout(dest: Path, commit: str = BASELINE_COMMIT) -> Path:
    """``steer_envs`` as of ``commit`` under ``dest`` (needs the git history: a full clone)."""
    archive = dest / "baseline.tar"
    with open(archive, "wb") as out:
        result = subprocess.run(
            ["git", "-C", str(REPO), "archive", commit, "steer_envs"], stdout=out, stderr=subprocess.PIPE
        )
    if result.returncode != 0:
        raise RuntimeError(
            f"cannot check out the baseline server at {commit[:10]} ({result.stderr.decode().strip()}); "
            "a full git clone is needed for this comparison"
        )
    with tarfile.open(archive) as tar:
        tar.extractall(dest / "baseline", filter="data")
    return dest / "baseline"


@dataclass
class ServerFigures:
    name: str
    reports: list[LoadReport]

    def median(self, attribute: str) -> float:
        return statistics.median(getattr(r, attribute) for r in self.reports)

    @property
    def errors(self) -> int:
        return sum(r.errors for r in self.reports)


def compare(
    servers: Sequence[ServerUnderTest], queries: Sequence[str], clients: int, requests: int, rounds: int
) -> list[ServerFigures]:
    """Alternate rounds of load over the servers (all running), after a warm-up each."""
    figures = {s.name: ServerFigures(s.name, []) for s in servers}
    for server in servers:
        run_load(server.url, queries, clients, 10)
    for round_index in range(rounds):
        for server in servers if round_index % 2 == 0 else list(reversed(servers)):
            offset = round_index * clients * requests
            figures[server.name].reports.append(
                run_load(server.url, queries[offset:] + queries[:offset], clients, requests)
            )
    return list(figures.values())


def with_current_bm25(baseline_root: Path, dest: Path) -> Path:
    """The baseline package with the current ``bm25.py`` (same bm25s scores, faster top-k): separates what the
    server stack gains from what the retriever gains."""
    import shutil

    shutil.copytree(baseline_root, dest)
    shutil.copy(REPO / "steer_envs" / "retrieval" / "bm25.py", dest / "steer_envs" / "retrieval" / "bm25.py")
    return dest


def default_servers(baseline_root: Path) -> list[ServerUnderTest]:
    return [
        ServerUnderTest("today's server (http.server, as of the baseline commit)", baseline_root),
        ServerUnderTest(
            "today's server with the current bm25.py (top-k selection only)",
            with_current_bm25(baseline_root, baseline_root.parent / "baseline_bm25"),
        ),
        ServerUnderTest("FastAPI + uvicorn, dynamic batching (2 ms window)", REPO, {"batch_window_ms": "2"}),
        ServerUnderTest(
            "FastAPI + uvicorn, dynamic batching (no window: what arrives during a search)",
            REPO,
            {"batch_window_ms": "0"},
        ),
        ServerUnderTest("FastAPI + uvicorn, no batching", REPO, {"batching": "0"}),
    ]


def markdown(figures: Sequence[ServerFigures], clients: int) -> str:
    base = figures[0].median("throughput")
    rows = [
        "| server | clients | requests/s | × today | p50 ms | p99 ms | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for f in figures:
        rows.append(
            f"| {f.name} | {clients} | {f.median('throughput'):.0f} | {f.median('throughput') / base:.2f} "
            f"| {f.median('p50_ms'):.1f} | {f.median('p99_ms'):.1f} | {f.errors} |"
        )
    return "\n".join(rows)


def run_comparison(clients: int = 8, requests: int = 150, rounds: int = 3) -> tuple[list[ServerFigures], str]:
    from steer_envs.data import load_tasks

    queries = [t.question for t in load_tasks(split="test")]
    with tempfile.TemporaryDirectory(prefix="steer_envs_baseline_") as tmp:
        servers = default_servers(baseline_checkout(Path(tmp)))
        try:
            for server in servers:
                server.start()
            time.sleep(0.5)
            figures = compare(servers, queries, clients, requests, rounds)
        finally:
            for server in servers:
                server.stop()
    return figures, markdown(figures, clients)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=150, help="requests per client per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    figures, table = run_comparison(args.clients, args.requests, args.rounds)
    print(table)
    return 1 if any(f.errors for f in figures) else 0


if __name__ == "__main__":
    raise SystemExit(main())
