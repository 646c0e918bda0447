"""A small OpenAI-compatible HTTP server wrapping any :class:`~steer_envs.llm.base.LLMBackend`.

Why the project has its own: CI has no GPU and no vLLM, yet the ``openai:`` backend and the executors built on
it must run for real, over real HTTP. Serving the transformers backend (the tiny model, or Gemma 270M) on
loopback gives exactly that. It is also handy for sharing one loaded model among several processes (vectorised
envs in subprocesses). Endpoints: ``GET /v1/models``, ``POST /v1/completions``, ``POST /v1/chat/completions``,
``GET /health``. Log-probabilities (``logprobs`` / ``top_logprobs``) are reported for the first generated token
only, which is what next-token scoring needs. Binds to 127.0.0.1 unless told otherwise: there is no auth.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import SteerEnvsError
from .base import GenerationConfig, LLMBackend


class BadRequest(Exception):
    """The client sent something the server cannot serve (HTTP 400)."""


def _stop_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise BadRequest("'stop' must be a string or a list of strings")


def _config(body: dict[str, Any]) -> GenerationConfig:
    try:
        return GenerationConfig(
            max_new_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or 16),
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            stop=_stop_list(body.get("stop")),
            seed=None if body.get("seed") is None else int(body["seed"]),
        )
    except (SteerEnvsError, TypeError, ValueError) as exc:
        raise BadRequest(f"invalid sampling settings: {exc}") from exc


class OpenAICompatibleServer:
    """Serve ``backend`` as model ``model_name`` on ``host:port`` (port 0 = any free port).

    Use as a context manager, or ``start()`` / ``stop()``; :attr:`base_url` is what ``openai:<model>@<url>`` wants.
    """

    def __init__(self, backend: LLMBackend, model_name: str = "local", host: str = "127.0.0.1", port: int = 0):
        self.backend = backend
        self.model_name = model_name
        self.requests_served = 0
        handler = self._handler_class()
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def spec(self) -> str:
        """The ``openai:`` backend/executor spec that reaches this server."""
        return f"openai:{self.model_name}@{self.base_url}"

    def start(self) -> "OpenAICompatibleServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="openai-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "OpenAICompatibleServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ----------------------------------------------------------------------------------
    def _complete(self, prompts: Sequence[str], body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        config = _config(body)
        n = int(body.get("n") or 1)
        prompts = [p for p in prompts for _ in range(n)]
        gens = self.backend.generate(prompts, config)
        k = body.get("logprobs")
        want_top = body.get("top_logprobs") if body.get("logprobs") is True else k
        tops = None
        if want_top:
            if not hasattr(self.backend, "top_logprobs"):
                raise BadRequest("this server's backend does not report log-probabilities")
            tops = self.backend.top_logprobs(prompts, int(want_top))
        choices = []
        for i, gen in enumerate(gens):
            choice: dict[str, Any] = {
                "index": i,
                "text": gen.text,
                "finish_reason": gen.finish_reason,
                "stop_reason": gen.stop_sequence,
                "logprobs": None,
            }
            if tops is not None:
                table = tops[i]
                first = max(table, key=table.get) if table else ""
                choice["logprobs"] = {"first_token": first, "table": table}
            choices.append(choice)
        usage = {"completion_tokens": sum(g.tokens for g in gens)}
        return choices, usage

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body.get("prompt")
        prompts = [prompt] if isinstance(prompt, str) else prompt
        if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
            raise BadRequest("'prompt' must be a string or a non-empty list of strings")
        choices, usage = self._complete(prompts, body)
        for c in choices:
            lp = c.pop("logprobs")
            c["logprobs"] = None if lp is None else {
                "tokens": [lp["first_token"]],
                "token_logprobs": [lp["table"].get(lp["first_token"])],
                "top_logprobs": [lp["table"]],
                "text_offset": [0],
            }
        return self._envelope("text_completion", choices, usage)

    def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages
        ):
            raise BadRequest("'messages' must be a non-empty list of {role, content} objects with string content")
        render = getattr(self.backend, "render_chat", None)
        prompt = render(messages) if render else "\n\n".join(m["content"] for m in messages)
        choices, usage = self._complete([prompt], body)
        for c in choices:
            lp = c.pop("logprobs")
            c["message"] = {"role": "assistant", "content": c.pop("text")}
            c["logprobs"] = None if lp is None else {"content": [{
                "token": lp["first_token"],
                "logprob": lp["table"].get(lp["first_token"]),
                "top_logprobs": [{"token": t, "logprob": v} for t, v in lp["table"].items()],
            }]}
        return self._envelope("chat.completion", choices, usage)

    def _envelope(self, kind: str, choices: list, usage: dict[str, int]) -> dict[str, Any]:
        self.requests_served += 1
        return {
            "id": f"cmpl-{uuid.uuid4().hex[:16]}",
            "object": kind,
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": {"prompt_tokens": 0, "completion_tokens": usage["completion_tokens"],
                      "total_tokens": usage["completion_tokens"]},
        }

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str, kind: str) -> None:
                self._send(status, {"error": {"message": message, "type": kind, "code": status}})

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                path = self.path.rstrip("/")
                if path in ("/v1/models", "/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": server.model_name, "object": "model", "owned_by": "steer-envs"}]})
                elif path == "/health":
                    self._send(200, {"status": "ok"})
                else:
                    self._error(404, f"no route GET {self.path}", "not_found")

            def do_POST(self) -> None:  # noqa: N802
                routes = {"/v1/completions": server.completions, "/v1/chat/completions": server.chat_completions}
                route = routes.get(self.path.rstrip("/"))
                if route is None:
                    self._error(404, f"no route POST {self.path}; try /v1/completions", "not_found")
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = json.loads(self.rfile.read(length) or b"{}")
                    if not isinstance(body, dict):
                        raise BadRequest("the request body must be a JSON object")
                    model = body.get("model")
                    if model not in (None, server.model_name):
                        self._error(404, f"model {model!r} is not served here; available: {server.model_name}",
                                    "model_not_found")
                        return
                    self._send(200, route(body))
                except (BadRequest, json.JSONDecodeError, ValueError) as exc:
                    self._error(400, str(exc), "invalid_request_error")
                except Exception as exc:  # noqa: BLE001 - report backend failures as HTTP 500
                    self._error(500, f"{type(exc).__name__}: {exc}", "server_error")

        return Handler


def serve_backend(backend: LLMBackend, model_name: str = "local", host: str = "127.0.0.1", port: int = 0):
    """Start serving in a background thread and return the running server."""
    return OpenAICompatibleServer(backend, model_name=model_name, host=host, port=port).start()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m steer_envs.llm.openai_server --backend hf:gemma-3-270m --port 8000``: serve until Ctrl-C."""
    import argparse

    from .registry import make_backend

    parser = argparse.ArgumentParser(description="Serve a steer-envs model backend as an OpenAI-compatible API.")
    parser.add_argument("--backend", default="hf:gemma-3-270m", help="backend spec, e.g. hf:gemma-3-270m or hf:DIR")
    parser.add_argument("--model-name", default=None, help="model id clients use (default: the backend argument)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default loopback; there is no auth)")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    try:
        backend = make_backend(args.backend)
    except SteerEnvsError as exc:
        parser.exit(2, f"error: {exc}\n")
    name = args.model_name or args.backend.partition(":")[2]
    server = OpenAICompatibleServer(backend, model_name=name, host=args.host, port=args.port)
    print(f"serving {args.backend} as {server.spec}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
