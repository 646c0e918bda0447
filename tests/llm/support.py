"""Fixtures and loopback servers shared by the LLM tests (imported by test modules, so pytest finds them)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from steer_envs.llm.base import Generation, GenerationConfig, match_candidates, truncate_at_stop


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny random Llama + BPE tokenizer, built offline once per session."""
    from steer_envs.llm.tiny import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"))


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir):
    from steer_envs.llm.hf import HFBackend

    return HFBackend(tiny_model_dir)


@pytest.fixture(scope="module")
def gemma_backend():
    """Gemma 3 270M from the pip package, converted once into ``$STEER_ENVS_CACHE`` (set it to keep the ~1.1 GB
    conversion between runs; CI does). Module-scoped: ``tests/conftest.py`` releases the shared models when each
    module ends, so the 1 GB model never sits beside the heavy tests of other modules."""
    from steer_envs.llm.registry import make_backend

    return make_backend("hf:gemma-3-270m")  # the shared instance, which executors built from specs reuse


class ScriptedBackend:
    """A backend that replies with given texts in order (cycling), honouring stop sequences like a server.

    Used beside the real-model tests, to drive the executor loop through exact protocol cases (search, answer,
    invalid) that a random tiny model would never produce on demand."""

    name = "scripted"

    def __init__(self, replies: Sequence[str]):
        self.replies = list(replies)
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def generate(self, prompts, config: GenerationConfig):
        out = []
        for prompt in prompts:
            with self.lock:
                reply = self.replies[len(self.calls) % len(self.replies)]
                self.calls.append(prompt)
            text, stop = truncate_at_stop(reply, config.stop)
            out.append(Generation(text, max(1, len(text.split())), "stop" if stop else "length", stop))
        return out

    def top_logprobs(self, prompts, k):
        return [{" yes": -0.5, " no": -1.2, "maybe": -3.0}][:k] * len(prompts)

    def next_token_logprobs(self, prompts, candidates):
        return [match_candidates(t, candidates) for t in self.top_logprobs(prompts, 20)]


class FaultServer:
    """A loopback HTTP server that misbehaves on purpose: ``timeout`` (answers too late), ``500``, ``malformed``
    (HTTP 200 with a body that is not JSON), ``404``, ``truncated`` (announces a longer body than it sends, then
    closes), ``trickle`` (sends its reply a byte at a time, each byte well within a socket timeout);
    ``flaky:N`` fails N times with 500, then proxies a healthy reply from ``healthy_url``; ``script`` answers
    completions with the texts of ``script`` in turn. ``die_after=N``: after N answered POSTs the server dies
    (drops the connection and stops listening), as a server killed mid-run does. Counts the POSTs it received.
    Only the OpenAI API's ``/v1/`` paths are served: anything else (vLLM's ``/tokenize``) is an uncounted 404."""

    def __init__(
        self,
        mode: str,
        delay: float = 2.0,
        healthy_url: str | None = None,
        script: Sequence[str] = (),
        die_after: int | None = None,
    ):
        self.mode = mode
        self.delay = delay
        self.healthy_url = healthy_url
        self.script = list(script)
        self.die_after = die_after
        self.posts = 0
        self.dead = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, status: int, body: bytes, ctype: str = "application/json"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.startswith("/v1/"):  # the OpenAI API only: no vLLM /tokenize, not counted
                    self._reply(404, json.dumps({"error": {"message": f"no route POST {self.path}"}}).encode())
                    return
                with server._lock:
                    server.posts += 1
                    n = server.posts
                mode = server.mode
                if server.die_after is not None and n > server.die_after:
                    server._die(self)
                    return
                if mode == "timeout":
                    time.sleep(server.delay)
                    self._reply(200, b"{}")
                elif mode == "500":
                    self._reply(500, json.dumps({"error": {"message": "GPU fell over"}}).encode())
                elif mode == "malformed":
                    self._reply(200, b"<html>proxy error</html>", "text/html")
                elif mode == "404":
                    self._reply(404, json.dumps({"error": {"message": "model not found"}}).encode())
                elif mode == "truncated":
                    body = json.dumps({"choices": [{"text": "x" * 200, "finish_reason": "stop"}]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[:40])
                    self.close_connection = True
                elif mode == "trickle":
                    body = json.dumps({"choices": [{"text": "slow", "finish_reason": "stop"}]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    try:
                        for i in range(len(body)):
                            self.wfile.write(body[i : i + 1])
                            self.wfile.flush()
                            time.sleep(server.delay)
                    except OSError:  # the client gave up and went away
                        pass
                elif mode == "script":
                    text = server.script[(n - 1) % len(server.script)]
                    self._reply(
                        200,
                        json.dumps(
                            {
                                "choices": [{"text": text, "finish_reason": "stop"}],
                                "usage": {"completion_tokens": len(text.split())},
                            }
                        ).encode(),
                    )
                elif mode.startswith("flaky:") and n <= int(mode.split(":")[1]):
                    self._reply(503, b'{"error": "warming up"}')
                else:
                    import urllib.request

                    req = urllib.request.Request(
                        server.healthy_url + self.path.removeprefix("/v1"),
                        data=raw,
                        headers={"Content-Type": "application/json"},
                    )
                    with urllib.request.urlopen(req, timeout=30) as resp:
                        self._reply(200, resp.read())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _die(self, handler) -> None:
        """Drop this connection without a reply and stop listening (new connections are refused)."""
        import socket

        handler.close_connection = True
        try:
            handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if not self.dead.is_set():
            self.dead.set()
            threading.Thread(target=self._stop, daemon=True).start()

    def _stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        if not self.dead.is_set():
            self._stop()
