"""Good clients beside hostile ones: ``serve-env`` (HTTP sessions) and ``serve-retriever`` (``/retrieve``) measured
unloaded and under attack, side by side in one run (``BENCHMARKS.md``'s "Servers under hostile load" section).

Why side by side: on a shared machine the load from elsewhere drifts by more than the effect measured, so unloaded
and loaded windows alternate (``rounds`` of each) and each condition pools its windows. Each server runs in its own
process with the limits its CLI uses by default; the good clients run here (asyncio, one keep-alive connection
each, paced: ``rate`` requests per second per client); the attackers run in a third process and attack only
during the loaded windows:

* header slowloris: connections that send a request line, then one header byte every ``trickle_s``;
* body slowloris: complete headers announcing a body, then one body byte every ``trickle_s``;
* oversized bodies: an announced 256 MiB body (sent until the server answers) and a chunked one without end;
* deeply nested JSON: bodies near the size limit, nested past the depth limit, or at it and wide (half a million
  arrays);

the oversized and nested attackers each start a request every ``flood_interval_s`` (a new connection each). The
attacker process runs at the lowest CPU priority (``nice 19``): on a machine this small its own CPU would otherwise
be charged to the servers. Each process's CPU use per condition is reported beside the latencies.

Acceptance: no good request refused (every one answered 2xx) and, per server, the good requests' p99 under
attack within 3x its unloaded p99. Run: ``python -m perf.hostile_load [--json FILE]`` (about 75 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from steer_envs.ids import GUIDED_SEARCH_ENV

REPO = Path(__file__).resolve().parents[1]
ENV_ID = GUIDED_SEARCH_ENV
QUERIES = (
    "who wrote hamlet",
    "capital of australia",
    "danube delta",
    "first man on the moon",
    "speed of light",
    "battle of hastings",
    "largest desert",
    "inventor of the telephone",
)
#: what a server process runs: the CLI's defaults, a free port, the url on stdout
_SERVE = {
    "env": (
        "from steer_envs.integrations.openenv import EnvServer, EnvServerConfig\n"
        f"server = EnvServer(EnvServerConfig({ENV_ID!r}, {{'action_mode': 'text'}}, port=0)).start()\n"
    ),
    "retriever": (
        "from steer_envs.retrieval import make_retriever\n"
        "from steer_envs.retrieval.registry import RetrieverContext\n"
        "from steer_envs.retrieval.server import ServerConfig, build_server\n"
        "server = build_server(make_retriever('bm25s'), RetrieverContext().corpus(), ServerConfig(port=0))\n"
        "server.start()\n"
    ),
}
_SERVE_TAIL = "print(server.url, flush=True)\nimport sys\nsys.stdin.read()\nserver.shutdown()\n"


@dataclass(frozen=True)
class LoadConfig:
    """The workload. ``window_s``: one unloaded or loaded window; ``settle_s``: the start of each window left out
    (attack connections opening, or closing); the attack counts are per server."""

    rounds: int = 3
    window_s: float = 8.0
    settle_s: float = 1.5
    good_clients: int = 3
    rate: float = 10.0
    header_slowloris: int = 64
    body_slowloris: int = 32
    oversized: int = 2
    nested: int = 2
    trickle_s: float = 0.5
    #: each oversized or nested attacker starts a request this often (on a new connection each time)
    flood_interval_s: float = 0.1
    #: the body a body-slowloris connection announces, and the one an oversized connection announces
    slow_body_bytes: int = 4096
    announced_bytes: int = 1 << 28


@dataclass
class Sample:
    server: str
    start: float
    latency_s: float
    status: int  # 0: no answer (connection error or timeout)


# -- a minimal HTTP/1.1 client on asyncio streams: exact control of what is sent and when ---------------------------
async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("closed before an answer")
    status = int(status_line.split()[1])
    length, chunked = 0, False
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if not chunked:
        return status, await reader.readexactly(length) if length else b""
    parts = []
    while size := int((await reader.readline()).split(b";")[0], 16):
        parts.append(await reader.readexactly(size))
        await reader.readline()
    await reader.readline()
    return status, b"".join(parts)


def _request(method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _split(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


class GoodClient:
    """One keep-alive connection sending normal requests at a fixed pace; every answer is a :class:`Sample`."""

    def __init__(self, server: str, url: str, index: int, samples: list[Sample], interval_s: float) -> None:
        self.server, self.address, self.index = server, _split(url), index
        self.samples, self.interval_s = samples, interval_s
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = b"" if body is None else json.dumps(body).encode()
        start, status, answer = time.time(), 0, None
        began = time.perf_counter()
        try:
            if self.streams is None:
                self.streams = await asyncio.open_connection(*self.address)
            reader, writer = self.streams
            writer.write(_request(method, path, data))
            await writer.drain()
            status, raw = await asyncio.wait_for(_read_response(reader), 30)
            answer = json.loads(raw) if raw else None
        except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
            if self.streams is not None:
                self.streams[1].close()
            self.streams = None
        self.samples.append(Sample(self.server, start, time.perf_counter() - began, status))
        return status, answer

    async def run(self, until: float) -> None:
        next_at = time.monotonic() + self.index * self.interval_s / 4
        steps = self._steps()
        while time.time() < until:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at += self.interval_s
            await steps.__anext__()
        await steps.aclose()
        if self.streams is not None:
            self.streams[1].close()

    async def _steps(self):
        if self.server == "retriever":
            i = self.index
            while True:
                i += 1
                yield await self.call(
                    "POST", "/retrieve", {"queries": [QUERIES[i % len(QUERIES)]], "topk": 3, "return_scores": True}
                )
        session, seed, done = None, self.index * 1000, True
        while True:
            if session is None:
                status, answer = await self.call("POST", "/sessions", {})
                session = answer["session_id"] if status == 201 else None
                yield
                continue
            if done:
                seed += 1
                status, _ = await self.call("POST", f"/sessions/{session}/reset", {"seed": seed})
                done, turn = status != 200, 0
                session = session if status == 200 else None
                yield
                continue
            turn += 1
            action = (
                f"<search> {QUERIES[(seed + turn) % len(QUERIES)]} </search>"
                if turn < 3
                else "<answer> paris </answer>"
            )
            status, answer = await self.call("POST", f"/sessions/{session}/step", {"action": action})
            done = status != 200 or bool(answer["done"]) or bool(answer["observation"].get("truncated"))
            yield


# -- the attackers -------------------------------------------------------------------------------------------------
def server_limits() -> dict[str, Any]:
    """What the servers refuse by their CLI's defaults: the body size per server, the nesting depth, the timeouts
    on a request's headers and body (read from the code, so the attack and the page follow any change)."""
    from steer_envs.integrations.openenv import EnvServerConfig
    from steer_envs.retrieval.server import ServerConfig
    from steer_envs.serving import BODY_TIMEOUT_S, HEADER_TIMEOUT_S
    from steer_envs.validation import DEFAULT_LIMITS

    return {
        "body_bytes": {"env": EnvServerConfig(ENV_ID).max_body_bytes, "retriever": ServerConfig().max_body_bytes},
        "max_depth": DEFAULT_LIMITS.max_depth,
        "header_timeout_s": HEADER_TIMEOUT_S,
        "body_timeout_s": BODY_TIMEOUT_S,
    }


def _wide(limit: int, depth: int) -> bytes:
    """Near ``limit`` bytes: ``[0]`` nested to ``depth`` levels (the outer array counted), repeated."""
    unit = b"[" * (depth - 2) + b"[0]" + b"]" * (depth - 2)
    return b"[" + b",".join([unit] * ((limit - 16) // (len(unit) + 1))) + b"]"


def _deep_bodies(limit: int, depth: int) -> list[bytes]:
    """Near ``limit`` bytes: nested far past the depth limit; and wide at the depth limit."""
    half = (limit - 16) // 2
    return [b"[" * half + b"]" * half, _wide(limit, depth)]


def decode_seconds(limit: int, depth: int) -> float:
    """What decoding before measuring would cost: ``json.loads`` of a body at the size limit nested one level past
    the depth limit and repeated (best of two), the work a server that decodes first does on its event loop."""
    body, best = _wide(limit, depth + 1), float("inf")
    for _ in range(2):
        start = time.perf_counter()
        json.loads(body)
        best = min(best, time.perf_counter() - start)
    return best


class Attack:
    """The hostile clients of one server, active only inside the loaded windows; what each got back is counted."""

    def __init__(self, server: str, url: str, config: LoadConfig, windows: list[tuple[float, float]]) -> None:
        self.server, self.address, self.config, self.windows = server, _split(url), config, windows
        self.outcomes: Counter[str] = Counter()
        self.limits = server_limits()
        self.body_limit = self.limits["body_bytes"][server]
        self.path = "/reset" if server == "env" else "/retrieve"

    def active(self) -> tuple[float, float] | None:
        now = time.time()
        return next(((a, b) for a, b in self.windows if a <= now < b), None)

    async def _wait_active(self) -> float | None:
        """The end of the loaded window now or next; None once the last has passed."""
        while True:
            window = self.active()
            if window is not None:
                return window[1]
            if time.time() >= self.windows[-1][1]:
                return None
            await asyncio.sleep(0.05)

    async def _connection(self, kind: str, send, interval_s: float = 0.0) -> None:
        next_at = time.monotonic()
        while (end := await self._wait_active()) is not None:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at = max(next_at + interval_s, time.monotonic())
            try:
                reader, writer = await asyncio.open_connection(*self.address)
            except OSError:
                self.outcomes[f"{kind}: connect failed"] += 1
                await asyncio.sleep(0.1)
                continue
            answer = asyncio.ensure_future(reader.read(1 << 16))
            try:
                await send(writer, answer, end)
                if time.time() < end:
                    first = await asyncio.wait_for(answer, max(0.1, end - time.time()))
                    self.outcomes[f"{kind}: {first[9:12].decode() or 'closed'}"] += 1
            except asyncio.TimeoutError:
                pass
            except (OSError, ConnectionError):
                self.outcomes[f"{kind}: reset"] += 1
            finally:
                answer.cancel()
                writer.close()

    async def _trickle(self, writer, answer, end: float, head: bytes, drip: bytes) -> None:
        writer.write(head)
        while not answer.done() and time.time() < end:
            writer.write(drip)
            await writer.drain()
            await asyncio.sleep(self.config.trickle_s)

    async def _oversized(self, writer, answer, end: float, chunked: bool) -> None:
        if chunked:  # a valid start of a JSON body (one endless string): the server must read up to its limit
            opening = b'{"queries": ["'
            writer.write(
                f"POST {self.path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
                + f"{len(opening):x}\r\n".encode()
                + opening
                + b"\r\n"
            )
            chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
        else:
            announced = self.config.announced_bytes
            writer.write(f"POST {self.path} HTTP/1.1\r\nHost: x\r\nContent-Length: {announced}\r\n\r\n".encode())
            chunk = b"x" * 0x10000
        while not answer.done() and time.time() < end:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0)

    async def _nested(self, writer, answer, end: float, body: bytes) -> None:
        writer.write(
            f"POST {self.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()

    async def run(self) -> None:
        c, tasks = self.config, []
        line = f"POST {self.path} HTTP/1.1\r\n".encode()
        for _ in range(c.header_slowloris):
            tasks.append(self._connection("header slowloris", lambda w, a, e: self._trickle(w, a, e, line, b"X")))
        body_head = (
            line + f"Host: x\r\nContent-Type: application/json\r\nContent-Length: {c.slow_body_bytes}\r\n\r\n".encode()
        )
        for _ in range(c.body_slowloris):
            tasks.append(self._connection("body slowloris", lambda w, a, e: self._trickle(w, a, e, body_head, b" ")))
        for i in range(c.oversized):
            tasks.append(
                self._connection(
                    "oversized " + ("chunked" if i % 2 else "announced"),
                    lambda w, a, e, ch=bool(i % 2): self._oversized(w, a, e, ch),
                    c.flood_interval_s,
                )
            )
        bodies = _deep_bodies(self.body_limit, self.limits["max_depth"])
        for i in range(c.nested):
            kind = "nested past the limit" if i % 2 == 0 else "nested at the limit, wide"
            tasks.append(
                self._connection(kind, lambda w, a, e, b=bodies[i % 2]: self._nested(w, a, e, b), c.flood_interval_s)
            )
        await asyncio.gather(*tasks)


async def _attack_all(urls: dict[str, str], config: LoadConfig, windows: list[tuple[float, float]]) -> dict:
    attacks = [Attack(name, url, config, windows) for name, url in urls.items()]
    await asyncio.gather(*(a.run() for a in attacks))
    return {a.server: dict(sorted(a.outcomes.items())) for a in attacks}


# -- the run -------------------------------------------------------------------------------------------------------
def _start_server(kind: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE[kind] + _SERVE_TAIL],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    return proc, ""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def _figures(samples: list[Sample], windows: dict[str, list[tuple[float, float]]], settle: float) -> dict:
    out: dict[str, Any] = {}
    for server in sorted({s.server for s in samples}):
        mine = [s for s in samples if s.server == server]
        row: dict[str, Any] = {
            "requests": len(mine),
            "refused": sum(1 for s in mine if not 200 <= s.status < 300),
            "refused_statuses": dict(Counter(s.status for s in mine if not 200 <= s.status < 300)),
        }
        for condition, spans in windows.items():
            lat = [s.latency_s * 1000 for s in mine if any(a + settle <= s.start < b for a, b in spans)]
            row[condition] = {
                "n": len(lat),
                "p50_ms": round(_percentile(lat, 50), 2),
                "p99_ms": round(_percentile(lat, 99), 2),
                "max_ms": round(max(lat, default=0), 2),
            }
        row["p99_ratio"] = round(row["loaded"]["p99_ms"] / row["unloaded"]["p99_ms"], 2)
        out[server] = row
    return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


async def _cpu_per_window(pids: dict[str, int], bounds: list[tuple[str, float, float]]) -> dict[str, dict[str, float]]:
    """Each process's CPU use (cores: CPU seconds per second) in each condition's windows, read at their edges."""
    used: dict[str, dict[str, list[float]]] = {name: {} for name in pids}
    for condition, start, end in bounds:
        await asyncio.sleep(max(0.0, start - time.time()))
        before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
        await asyncio.sleep(max(0.0, end - time.time()))
        for name, pid in pids.items():
            used[name].setdefault(condition, []).append((_cpu_seconds(pid) - before[name]) / (end - start))
    return {name: {c: round(sum(v) / len(v), 3) for c, v in conditions.items()} for name, conditions in used.items()}


def _load_average() -> list[float]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return []


def run_mixed_load(config: LoadConfig = LoadConfig()) -> dict[str, Any]:
    """Start both servers, run the alternating windows, stop everything; the figures (see the module docstring)."""
    began = time.perf_counter()
    load_before = _load_average()
    limits = server_limits()
    decode_s = decode_seconds(limits["body_bytes"]["env"], limits["max_depth"])
    began_servers = time.perf_counter()
    procs = {kind: _start_server(kind)[0] for kind in ("env", "retriever")}
    try:
        urls = {}
        for kind, proc in procs.items():
            line = proc.stdout.readline().strip()  # type: ignore[union-attr]
            if not line.startswith("http://"):
                raise RuntimeError(f"the {kind} server did not start (exit {proc.poll()})")
            urls[kind] = line
        ready_s = time.perf_counter() - began_servers
        pids = {f"{kind} server": proc.pid for kind, proc in procs.items()}
        return _measure(urls, config, pids) | {
            "server_start_s": round(ready_s, 1),
            "load_before": load_before,
            "load_after": _load_average(),
            "config": asdict(config),
            "limits": limits,
            "decode_s": round(decode_s, 3),
            "wall_s": round(time.perf_counter() - began, 1),
        }
    finally:
        for proc in procs.values():
            try:
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(15)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()


def _measure(urls: dict[str, str], config: LoadConfig, pids: dict[str, int]) -> dict[str, Any]:
    warm_up = 2.0
    t0 = time.time() + warm_up + 1.0  # the attack process needs a moment to start
    windows: dict[str, list[tuple[float, float]]] = {"unloaded": [], "loaded": []}
    at = t0
    for _ in range(config.rounds):
        for condition in ("unloaded", "loaded"):
            windows[condition].append((at, at + config.window_s))
            at += config.window_s
    attacker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perf.hostile_load",
            "attack",
            json.dumps(urls),
            json.dumps(asdict(config)),
            json.dumps(windows["loaded"]),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
    )
    samples: list[Sample] = []
    bounds = sorted(((c, a + config.settle_s, b) for c, spans in windows.items() for a, b in spans), key=lambda w: w[1])
    pids = {**pids, "attackers": attacker.pid, "good clients": os.getpid()}

    async def clients() -> dict[str, dict[str, float]]:
        good = [
            GoodClient(kind, url, i, samples, 1 / config.rate)
            for kind, url in urls.items()
            for i in range(config.good_clients)
        ]
        cpu = asyncio.ensure_future(_cpu_per_window(pids, bounds))
        await asyncio.gather(*(c.run(at) for c in good))
        return await cpu

    cpu = asyncio.run(clients())
    out, _ = attacker.communicate(timeout=60)
    figures = _figures(samples, windows, config.settle_s)
    return {
        "servers": figures,
        "cpu_cores": cpu,
        "attack": json.loads(out.strip().splitlines()[-1]) if out.strip() else {},
    }


#: the acceptance bar: each server's p99 under attack within this many times its unloaded p99
P99_RATIO_LIMIT = 3.0


def acceptance(figures: dict[str, Any], ratio: float = P99_RATIO_LIMIT) -> list[str]:
    """What the run fails of the acceptance (empty: met)."""
    problems = []
    for server, row in figures["servers"].items():
        if row["refused"]:
            problems.append(f"{server}: {row['refused']} good requests refused ({row['refused_statuses']})")
        if not row["p99_ratio"] <= ratio:
            problems.append(
                f"{server}: p99 {row['loaded']['p99_ms']} ms under attack vs {row['unloaded']['p99_ms']} "
                f"ms unloaded ({row['p99_ratio']}x > {ratio}x)"
            )
    return problems


def table(figures: dict[str, Any]) -> str:
    header = (
        "| server | good requests | unloaded p50 ms | unloaded p99 ms | under attack p50 ms "
        "| under attack p99 ms | p99 ratio | refused |"
    )
    lines = [header, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for server, row in figures["servers"].items():
        u, a = row["unloaded"], row["loaded"]
        lines.append(
            f"| {server} | {row['requests']} | {u['p50_ms']} | {u['p99_ms']} | {a['p50_ms']} | {a['p99_ms']} "
            f"| {row['p99_ratio']}x | {row['refused']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["attack"]:  # the attacker process (started by _measure)
        os.nice(19)  # its own CPU stands for another machine's: it yields the shared cores to servers and clients
        windows = [tuple(w) for w in json.loads(args[3])]
        config = LoadConfig(**json.loads(args[2]))
        print(json.dumps(asyncio.run(_attack_all(json.loads(args[1]), config, windows))), flush=True)
        return 0
    parser = argparse.ArgumentParser(prog="python -m perf.hostile_load", description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--rounds", type=int, default=LoadConfig.rounds)
    parser.add_argument("--window", type=float, default=LoadConfig.window_s)
    opts = parser.parse_args(args)
    figures = run_mixed_load(LoadConfig(rounds=opts.rounds, window_s=opts.window))
    if opts.json:
        opts.json.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    print(table(figures))
    problems = acceptance(figures)
    print("acceptance: " + ("met" if not problems else "NOT met: " + "; ".join(problems)))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
