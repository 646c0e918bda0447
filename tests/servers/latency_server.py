"""A loopback OpenAI-compatible completions server that answers every request after a set latency.

Why: the client side of serving (the ``openai:`` backend, the concurrent vector env, thread rollout pools) is
measured and tested against a real HTTP server whose only behaviour is "a GPU server answers in ``latency``
seconds, and takes as many requests at once as it is sent" — which no model on a CPU can imitate. It counts
what the client-side claims are about: requests, TCP connections opened, and the most requests in flight at
once. HTTP/1.1 keep-alive, standard library only.

The latency is fixed by default; with a coefficient of variation ``cv > 0`` each request draws its own from a
lognormal of mean ``latency`` (seeded: the same seed gives the same sequence of draws), because real generation
latencies differ by an order of magnitude between requests (short answers, long reasoning, a busy batch), and a
client that waits for the slowest of a batch every step loses what a fixed latency hides.

``reply(prompt) -> text`` gives the completion; the default one runs a Search-R1 episode: a search on the first
turn, then an answer (the executor closes the tags from the reported stop string, as with vLLM).

In a thread of the caller (:class:`LatencyServer`, on ``ThreadingHTTPServer``: a thread per connection) the
server shares the caller's interpreter lock, which is what a test wants (counters read directly);
:class:`LatencyServerProcess` runs it as its own process, as a real model server is (``python -m
tests.servers.latency_server --latency 0.1 [--cv 1 --seed 0]``; counters at ``GET /stats``), so a benchmark
measures the client alone. The process serves on one asyncio event loop (:class:`AsyncLatencyServer`): a fraction
of ``http.server``'s CPU a request, which on a small machine would otherwise be taken from the measured client.
"""

from __future__ import annotations

import json
import math
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: the repository root: ``python -m tests.servers.latency_server`` runs from there
REPO = Path(__file__).resolve().parents[2]


def search_then_answer(prompt: str) -> tuple[str, str]:
    """``(text, stop string)``: a search while the prompt holds no retrieved passage yet (Search-R1's template
    names the ``<information>`` tag once; a search result opens with ``<information>Doc 1``), then an answer."""
    if "<information>Doc 1" not in prompt:
        return "<think> I should look this up. </think>\n<search> first nobel prize in physics", "</search>"
    return "<think> The documents answer it. </think>\n<answer> Wilhelm Conrad Röntgen", "</answer>"


def answer_at_once(prompt: str) -> tuple[str, str]:
    """``(text, stop string)``: an answer on the first turn (one request an episode, no search: isolates the
    client's HTTP and env work from the retriever's)."""
    return "<think> I know this one. </think>\n<answer> Wilhelm Conrad Röntgen", "</answer>"


@dataclass(frozen=True)
class Latency:
    """Seconds before each answer: ``mean`` exactly when ``cv`` is 0, else a lognormal draw of mean ``mean`` and
    coefficient of variation ``cv`` (standard deviation / mean) from a generator seeded with ``seed``."""

    mean: float = 0.1
    cv: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mean < 0 or self.cv < 0:
            raise ValueError(f"latency mean and cv must be >= 0, got mean={self.mean}, cv={self.cv}")

    def sampler(self) -> Callable[[], float]:
        """A thread-safe function returning the next latency (one generator: draws follow the seed's sequence)."""
        if self.cv == 0 or self.mean == 0:
            return lambda: self.mean
        sigma = math.sqrt(math.log1p(self.cv**2))  # lognormal whose mean is exp(mu + sigma^2 / 2) = self.mean
        mu = math.log(self.mean) - sigma**2 / 2
        rng, lock = random.Random(self.seed), threading.Lock()

        def draw() -> float:
            with lock:
                return rng.lognormvariate(mu, sigma)

        return draw


#: the replies :class:`LatencyServerProcess` and the command line can name
REPLIES: dict[str, Callable[[str], tuple[str, str | None]]] = {"search": search_then_answer, "answer": answer_at_once}


def completion(
    path: str, body: dict[str, Any], reply: Callable[[str], tuple[str, str | None]], model_name: str
) -> dict[str, Any]:
    """The OpenAI-style reply to request ``body`` on ``path`` (a completion, or a chat completion)."""
    chat = path.endswith("/chat/completions")
    prompt = "".join(m.get("content", "") for m in body.get("messages", [])) if chat else str(body.get("prompt"))
    text, stop = reply(prompt)
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "stop_reason": stop}
    choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
    return {
        "id": "cmpl-fake",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [choice],
        "usage": {"completion_tokens": max(1, len(text.split()))},
    }


class LatencyServer:
    """Serve ``POST /v1/completions`` (and ``/v1/chat/completions``) after ``latency`` seconds each (or a seeded
    lognormal draw of that mean when ``cv > 0``, see :class:`Latency`), on ``127.0.0.1`` (any free port). Use as a
    context manager; :attr:`spec` is the ``openai:`` spec that reaches it.

    Counters (thread-safe): :attr:`requests`, :attr:`connections` (TCP connections accepted),
    :attr:`peak_in_flight` (the most requests being answered at once)."""

    def __init__(
        self,
        latency: float = 0.1,
        reply: Callable[[str], tuple[str, str | None]] = search_then_answer,
        model_name: str = "fake",
        cv: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.latency = float(latency)
        self.delay = Latency(self.latency, cv, seed).sampler()
        self.reply = reply
        self.model_name = model_name
        self.requests = 0
        self.connections = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # headers and body go out in two writes; with Nagle's algorithm the body would wait for the
                # client's delayed ACK of the headers (~40 ms a reply). Real servers (uvicorn, vLLM) set it too.
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with server._lock:
                    server.connections += 1

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if not self.path.startswith("/stats"):
                    self.send_error(404, "only GET /stats (and POST /v1/completions, /v1/chat/completions)")
                    return
                body = json.dumps(server.counters(reset="reset=1" in self.path)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.requests += 1
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    time.sleep(server.delay())
                    body = json.dumps(server._answer(self.path, json.loads(raw))).encode()
                finally:
                    with server._lock:
                        server.in_flight -= 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.httpd.daemon_threads = True
        # hundreds of clients connect at once: the listen backlog must hold them (set before listen(), which
        # takes it; with the default 5 the kernel drops the SYNs beyond it and those clients retry after 1-3 s)
        self.httpd.request_queue_size = 1024
        try:
            self.httpd.server_bind()
            self.httpd.server_activate()
        except BaseException:
            self.httpd.server_close()
            raise
        self._thread: threading.Thread | None = None

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return completion(path, body, self.reply, self.model_name)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        assert isinstance(host, str)  # bound to an IPv4 address given as text
        return f"http://{host}:{port}/v1"

    @property
    def spec(self) -> str:
        return f"openai:{self.model_name}@{self.base_url}"

    def counters(self, reset: bool = False) -> dict[str, int]:
        """``requests``, ``connections``, ``peak_in_flight`` so far (since the last reset); ``reset`` zeroes them
        (connections already open stay open: later requests on them count, their opening does not)."""
        with self._lock:
            out = {"requests": self.requests, "connections": self.connections, "peak_in_flight": self.peak_in_flight}
            if reset:
                self.requests = self.connections = self.peak_in_flight = 0
        return out

    def reset_counters(self) -> None:
        self.counters(reset=True)

    def start(self) -> LatencyServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="latency-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LatencyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class AsyncLatencyServer:
    """:class:`LatencyServer`'s protocol and counters on one asyncio event loop: the engine of the process mode.

    Why: ``http.server`` spends about 0.5 ms of CPU a request (a thread per connection, an ``email`` header
    parser); at thousands of requests a second on a 2-core machine the server would take that CPU from the client
    it is there to measure. Here a request is a coroutine that parses the head by hand and sleeps its latency on
    the loop. HTTP/1.1 keep-alive; ``Content-Length`` request bodies (what the ``openai:`` backend sends)."""

    def __init__(
        self,
        latency: float = 0.1,
        reply: Callable[[str], tuple[str, str | None]] = search_then_answer,
        model_name: str = "fake",
        cv: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.delay = Latency(latency, cv, seed).sampler()
        self.reply = reply
        self.model_name = model_name
        self.requests = self.connections = self.in_flight = self.peak_in_flight = 0
        self.base_url = ""

    async def start(self) -> str:
        """Listen on ``127.0.0.1`` (any free port); the base URL (``http://127.0.0.1:PORT/v1``)."""
        import asyncio

        server = await asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=1024)
        host, port = server.sockets[0].getsockname()[:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self.base_url

    def counters(self, reset: bool = False) -> dict[str, int]:
        """As :meth:`LatencyServer.counters` (the loop's one thread changes them: no lock)."""
        out = {"requests": self.requests, "connections": self.connections, "peak_in_flight": self.peak_in_flight}
        if reset:
            self.requests = self.connections = self.peak_in_flight = 0
        return out

    async def _connection(self, reader: Any, writer: Any) -> None:
        import asyncio

        self.connections += 1
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path, *_ = head[0].split(" ")
                fields = dict(line.lower().split(":", 1) for line in head[1:] if ":" in line)
                raw = await reader.readexactly(int(fields.get("content-length", "0").strip() or 0))
                status, body = await self._respond(method, path, raw)
                writer.write(
                    f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
                    "\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                if fields.get("connection", "").strip() == "close":
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass  # the client went away (or sent what this server does not read): drop the connection
        finally:
            writer.close()

    async def _respond(self, method: str, path: str, raw: bytes) -> tuple[str, bytes]:
        import asyncio

        if method == "GET" and path.startswith("/stats"):
            return "200 OK", json.dumps(self.counters(reset="reset=1" in path)).encode()
        if method != "POST":
            return "404 Not Found", b'{"error": "only GET /stats and POST /v1/completions, /v1/chat/completions"}'
        self.requests += 1
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay())
        finally:
            self.in_flight -= 1
        return "200 OK", json.dumps(completion(path, json.loads(raw), self.reply, self.model_name)).encode()


class LatencyServerProcess:
    """:class:`LatencyServer` in a child process (``python -m tests.servers.latency_server``); same
    :attr:`base_url` / :attr:`spec`, counters through :meth:`counters` (``GET /stats``)."""

    def __init__(
        self, latency: float = 0.1, model_name: str = "fake", reply: str = "search", cv: float = 0.0, seed: int = 0
    ) -> None:
        if reply not in REPLIES:
            raise ValueError(f"reply must be one of {sorted(REPLIES)}, got {reply!r}")
        Latency(latency, cv, seed)  # checked here, not in the child
        self.latency = latency
        self.cv = cv
        self.seed = seed
        self.model_name = model_name
        self.reply = reply
        self.base_url = ""
        self._proc: Any = None

    @property
    def spec(self) -> str:
        return f"openai:{self.model_name}@{self.base_url}"

    def start(self) -> LatencyServerProcess:
        import subprocess
        import sys

        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.servers.latency_server",
                "--latency",
                str(self.latency),
                "--cv",
                str(self.cv),
                "--seed",
                str(self.seed),
                "--model-name",
                self.model_name,
                "--reply",
                self.reply,
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,  # the module runs from a checkout's root, whatever the caller's folder
        )
        line = self._proc.stdout.readline().strip()
        if not line.startswith("serving "):
            self.stop()
            raise RuntimeError(f"the latency server did not start (it printed {line!r})")
        self.base_url = line.split(" ", 1)[1]
        return self

    def counters(self, reset: bool = False) -> dict[str, int]:
        import urllib.request

        url = self.base_url.removesuffix("/v1") + "/stats" + ("?reset=1" if reset else "")
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            self._proc = None

    def __enter__(self) -> LatencyServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--latency", type=float, default=0.1, help="seconds before every answer, or their mean with --cv (default 0.1)"
    )
    parser.add_argument(
        "--cv", type=float, default=0.0, help="coefficient of variation of a lognormal latency (default 0: fixed)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the lognormal draws (default 0)")
    parser.add_argument("--model-name", default="fake")
    parser.add_argument(
        "--reply",
        choices=sorted(REPLIES),
        default="search",
        help="search: a search, then an answer, per episode (default); answer: an answer at once",
    )
    args = parser.parse_args(argv)
    import asyncio

    async def serve() -> None:
        server = AsyncLatencyServer(
            args.latency, reply=REPLIES[args.reply], model_name=args.model_name, cv=args.cv, seed=args.seed
        )
        print(f"serving {await server.start()}", flush=True)
        await asyncio.Event().wait()  # until the process is terminated

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = [
    "AsyncLatencyServer",
    "Latency",
    "LatencyServer",
    "LatencyServerProcess",
    "REPLIES",
    "answer_at_once",
    "search_then_answer",
]
