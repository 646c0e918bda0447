"""A small OpenAI-compatible HTTP server wrapping any :class:`~steer_envs.llm.base.LLMBackend`, on FastAPI + uvicorn.

Why the project has its own: CI has no GPU and no vLLM, yet the ``openai:`` backend and the executors built on
it must run for real, over real HTTP. Serving the transformers backend (the tiny model, or Gemma 270M) on
loopback gives exactly that. It is also handy for sharing one loaded model among several processes (vectorised
envs in subprocesses). Endpoints: ``GET /v1/models``, ``POST /v1/completions``, ``POST /v1/chat/completions``,
``GET /health``, ``GET /docs`` (OpenAPI). Request bodies are validated by pydantic models
(:class:`CompletionRequest`, :class:`ChatRequest`); errors come back OpenAI-style (``{"error": {...}}``, 400 /
401 / 404 / 500). Log-probabilities (``logprobs`` / ``top_logprobs``) are reported for the first generated token
only, which is what next-token scoring needs. Chat requests honour vLLM's ``continue_final_message`` /
``add_generation_prompt`` fields (an executor's transcript continued as the assistant's unfinished message).
Binds to 127.0.0.1 unless told otherwise; with an API key (``--api-key`` or ``$STEER_ENVS_API_KEY``) requests
need ``Authorization: Bearer KEY`` (OpenAI clients send it).

Like vLLM, the server enforces its model's context (``max_model_len``: given, else the backend's
``context_length``): a request whose prompt tokens plus ``max_tokens`` exceed it is answered HTTP 400 with vLLM's
own wording (:func:`context_overflow_message`), and ``GET /v1/models`` lists ``max_model_len`` on the model entry, so
the client's context-length discovery and its overflow recogniser run against the exact replies vLLM gives.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from steer_envs.errors import SteerEnvsError
from steer_envs.llm.base import ContextOverflowError, GenerationConfig, LLMBackend, context_length_of
from steer_envs.serving import (
    UvicornServer,
    authorized,
    origin_allowed,
    origin_refusal,
    parse_origins,
    resolve_api_key,
    warn_if_exposed,
)
from steer_envs.validation import RequestError, parse_json_async, read_body

#: most choices one request may ask for (``n``), and the largest request body (bytes)
MAX_N = 64
MAX_BODY_BYTES = 4 * 1024 * 1024


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = "user"
    content: str


class _SamplingFields(BaseModel):
    """The sampling fields both endpoints read; other OpenAI fields are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    max_tokens: StrictInt | None = None  # strict: true is not a count
    max_completion_tokens: StrictInt | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: str | list[str] | None = None
    seed: StrictInt | None = None
    n: StrictInt | None = Field(None, ge=1, le=MAX_N)  # each choice is a generation: unbounded n is unbounded work
    logprobs: bool | StrictInt | None = None
    top_logprobs: StrictInt | None = Field(None, ge=0, le=20)


class CompletionRequest(_SamplingFields):
    prompt: str | list[str] | None = None


class ChatRequest(_SamplingFields):
    messages: list[ChatMessage] | None = None
    #: vLLM's / SGLang's extra fields: continue the final (assistant) message instead of opening a new turn
    continue_final_message: bool | None = None
    add_generation_prompt: bool | None = None


#: what a validation error of each field means, in words that say what the field must be
_FIELD_MESSAGES = {
    "prompt": "'prompt' must be a string or a non-empty list of strings",
    "messages": "'messages' must be a non-empty list of {role, content} objects with string content",
    "stop": "'stop' must be a string or a list of strings",
}


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


def context_overflow_message(prompt_tokens: int, max_tokens: int, max_model_len: int) -> str:
    """vLLM's (0.10) reply to a request that does not fit ``max_model_len``: the prompt alone, or with
    ``max_tokens`` generated tokens."""
    if prompt_tokens >= max_model_len:
        return (
            f"This model's maximum context length is {max_model_len} tokens. However, your request has "
            f"{prompt_tokens} input tokens. Please reduce the length of the input messages."
        )
    return (
        f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's maximum context length "
        f"is {max_model_len} tokens and your request has {prompt_tokens} input tokens ({max_tokens} > "
        f"{max_model_len} - {prompt_tokens})."
    )


#: an endpoint's handler: an unbound method of the server (the routes hold no server instance)
_Route = Callable[["OpenAICompatibleServer", dict[str, Any]], dict[str, Any]]


class OpenAICompatibleServer:
    """Serve ``backend`` as model ``model_name`` on ``host:port`` (port 0 = any free port).

    Use as a context manager, or ``start()`` / ``stop()``; :attr:`base_url` is what ``openai:<model>@<url>`` wants.
    ``max_model_len``: the context it enforces, as vLLM does (default: the backend's ``context_length``); it needs a
    backend that counts tokens (``count_prompt_tokens``), else only the backend's own check applies.
    """

    def __init__(
        self,
        backend: LLMBackend,
        model_name: str = "local",
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        max_model_len: int | None = None,
        allowed_origins: tuple[str, ...] = (),
        max_body_bytes: int = MAX_BODY_BYTES,
    ):
        if max_model_len is not None and (
            isinstance(max_model_len, bool) or not isinstance(max_model_len, int) or max_model_len < 2
        ):
            raise SteerEnvsError(f"max_model_len must be an integer >= 2 (tokens of context), got {max_model_len!r}")
        self.backend = backend
        self.model_name = model_name
        self.api_key = api_key
        self.allowed_origins = tuple(allowed_origins)
        self.max_body_bytes = max_body_bytes
        self.max_model_len = max_model_len if max_model_len is not None else context_length_of(backend)
        self.requests_served = 0
        self._count_lock = threading.Lock()
        self.app = self._create_app()
        self.httpd = UvicornServer(self.app, host, port)

    @property
    def base_url(self) -> str:
        return f"{self.httpd.url}/v1"

    @property
    def spec(self) -> str:
        """The ``openai:`` backend/executor spec that reaches this server."""
        return f"openai:{self.model_name}@{self.base_url}"

    def start(self) -> OpenAICompatibleServer:
        self.httpd.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ----------------------------------------------------------------------------------
    def _check_context(self, prompts: Sequence[str], max_tokens: int) -> None:
        """vLLM's check: prompt tokens plus ``max_tokens`` must fit ``max_model_len`` (400 otherwise)."""
        count = getattr(self.backend, "count_prompt_tokens", None)
        if self.max_model_len is None or count is None:
            return
        for prompt in dict.fromkeys(prompts):
            n = int(count(prompt))
            if n + max_tokens > self.max_model_len:
                raise BadRequest(context_overflow_message(n, max_tokens, self.max_model_len))

    def _complete(self, prompts: Sequence[str], body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        config = _config(body)
        self._check_context(prompts, config.max_new_tokens)
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
                first = max(table, key=lambda token: table[token]) if table else ""
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
            c["logprobs"] = (
                None
                if lp is None
                else {
                    "tokens": [lp["first_token"]],
                    "token_logprobs": [lp["table"].get(lp["first_token"])],
                    "top_logprobs": [lp["table"]],
                    "text_offset": [0],
                }
            )
        return self._envelope("text_completion", choices, usage)

    def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if (
            not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
        ):
            raise BadRequest("'messages' must be a non-empty list of {role, content} objects with string content")
        continued = bool(body.get("continue_final_message"))
        if continued and body.get("add_generation_prompt"):
            raise BadRequest("set at most one of 'continue_final_message' and 'add_generation_prompt' (as vLLM)")
        if continued and messages[-1].get("role") != "assistant":
            raise BadRequest("'continue_final_message' continues the last message, which must be the assistant's")
        render = getattr(self.backend, "render_chat", None)
        if render is None:
            prompt = "\n\n".join(m["content"] for m in messages)
        else:
            prompt = render(messages, continue_final_message=True) if continued else render(messages)
        choices, usage = self._complete([prompt], body)
        for c in choices:
            lp = c.pop("logprobs")
            c["message"] = {"role": "assistant", "content": c.pop("text")}
            c["logprobs"] = (
                None
                if lp is None
                else {
                    "content": [
                        {
                            "token": lp["first_token"],
                            "logprob": lp["table"].get(lp["first_token"]),
                            "top_logprobs": [{"token": t, "logprob": v} for t, v in lp["table"].items()],
                        }
                    ]
                }
            )
        return self._envelope("chat.completion", choices, usage)

    def _envelope(self, kind: str, choices: list, usage: dict[str, int]) -> dict[str, Any]:
        with self._count_lock:
            self.requests_served += 1
        return {
            "id": f"cmpl-{uuid.uuid4().hex[:16]}",
            "object": kind,
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": {
                "prompt_tokens": 0,
                "completion_tokens": usage["completion_tokens"],
                "total_tokens": usage["completion_tokens"],
            },
        }

    def _create_app(self) -> FastAPI:
        """The routes reach this server through ``request.app.state.server``, never through a closure: FastAPI
        keeps endpoint functions in module-level caches, and a closure over the server would keep its backend (a
        whole model) alive for the life of the process after the server stopped."""
        app = FastAPI(
            title="steer-envs OpenAI-compatible test server",
            version="1",
            description="Serves a steer-envs model backend with the OpenAI completions API.",
        )
        app.state.server = self

        def respond(status: int, payload: dict[str, Any], close: bool = False) -> Response:
            return Response(
                json.dumps(payload).encode(),
                status_code=status,
                media_type="application/json",
                headers={"Connection": "close"} if close else None,
            )

        def error(status: int, message: str, kind: str, close: bool = False) -> Response:
            return respond(status, {"error": {"message": message, "type": kind, "code": status}}, close)

        def schema_of(model: type[BaseModel]) -> dict[str, Any]:
            return {
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": model.model_json_schema()}},
                }
            }

        async def handle(request: Request, model: type[_SamplingFields], route: _Route) -> Response:
            server: OpenAICompatibleServer = request.app.state.server
            if not origin_allowed(request.headers, server.allowed_origins):
                return error(403, origin_refusal(request.headers), "forbidden")
            if not authorized(request.headers, request.url.path, server.api_key):
                return error(401, "missing or wrong API key; send 'Authorization: Bearer KEY'", "invalid_api_key")
            try:
                body = await parse_json_async(await read_body(request, server.max_body_bytes), empty={})
                if not isinstance(body, dict):
                    raise BadRequest("the request body must be a JSON object")
                try:
                    model.model_validate(body)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    field = str(first["loc"][0]) if first["loc"] else ""
                    raise BadRequest(_FIELD_MESSAGES.get(field, f"invalid field {field!r}: {first['msg']}")) from None
                if body.get("model") not in (None, server.model_name):
                    return error(
                        404,
                        f"model {body.get('model')!r} is not served here; available: {server.model_name}",
                        "model_not_found",
                    )
                # generation holds the CPU for a while: off the event loop, so other requests keep flowing in
                return respond(200, await asyncio.to_thread(route, server, body))
            except RequestError as exc:  # the shared checks: body size, nesting, integer size, lone surrogates
                return error(exc.status, str(exc), "invalid_request_error", exc.close)
            except (BadRequest, ContextOverflowError, json.JSONDecodeError, ValueError) as exc:
                return error(400, str(exc), "invalid_request_error")
            except Exception as exc:  # noqa: BLE001 - report backend failures as HTTP 500
                return error(500, f"{type(exc).__name__}: {exc}", "server_error")

        @app.post("/v1/completions", openapi_extra=schema_of(CompletionRequest))
        async def completions(request: Request) -> Response:
            return await handle(request, CompletionRequest, OpenAICompatibleServer.completions)

        @app.post("/v1/chat/completions", openapi_extra=schema_of(ChatRequest))
        async def chat_completions(request: Request) -> Response:
            return await handle(request, ChatRequest, OpenAICompatibleServer.chat_completions)

        @app.get("/v1/models")
        async def models(request: Request) -> Response:
            server: OpenAICompatibleServer = request.app.state.server
            if not authorized(request.headers, request.url.path, server.api_key):
                return error(401, "missing or wrong API key; send 'Authorization: Bearer KEY'", "invalid_api_key")
            entry: dict[str, Any] = {"id": server.model_name, "object": "model", "owned_by": "steer-envs"}
            if server.max_model_len is not None:
                entry["max_model_len"] = server.max_model_len  # as vLLM lists it
            return respond(200, {"object": "list", "data": [entry]})

        app.add_api_route("/models", models, methods=["GET"], include_in_schema=False)

        @app.get("/health")
        async def health() -> Response:
            return respond(200, {"status": "ok"})

        @app.exception_handler(StarletteHTTPException)
        async def not_found(request: Request, exc: StarletteHTTPException) -> Response:
            if exc.status_code in (404, 405):
                hint = "; try /v1/completions" if request.method == "POST" else ""
                return error(404, f"no route {request.method} {request.url.path}{hint}", "not_found")
            return error(exc.status_code, str(exc.detail), "invalid_request_error")

        return app


def serve_backend(
    backend: LLMBackend,
    model_name: str = "local",
    host: str = "127.0.0.1",
    port: int = 0,
    api_key: str | None = None,
    max_model_len: int | None = None,
):
    """Start serving in a background thread and return the running server."""
    return OpenAICompatibleServer(
        backend, model_name=model_name, host=host, port=port, api_key=api_key, max_model_len=max_model_len
    ).start()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.servers.openai_server --backend hf:gemma-3-270m --port 8000``: serve until Ctrl-C."""
    import argparse

    from steer_envs.llm.registry import make_backend

    parser = argparse.ArgumentParser(description="Serve a steer-envs model backend as an OpenAI-compatible API.")
    parser.add_argument("--backend", default="hf:gemma-3-270m", help="backend spec, e.g. hf:gemma-3-270m or hf:DIR")
    parser.add_argument("--model-name", default=None, help="model id clients use (default: the backend argument)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default loopback: this machine only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--api-key",
        default=None,
        help="require 'Authorization: Bearer KEY' on every API request (default $STEER_ENVS_API_KEY)",
    )
    parser.add_argument(
        "--max-model-len",
        type=int,
        default=None,
        help="context to enforce in tokens, as vLLM does (default: the model's)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also serve browser pages of this origin ('*': any); by default only this machine's",
    )
    args = parser.parse_args(argv)
    api_key = resolve_api_key(args.api_key)
    try:
        backend = make_backend(args.backend)
    except SteerEnvsError as exc:
        parser.exit(2, f"error: {exc}\n")
    name = args.model_name or args.backend.partition(":")[2]
    try:
        server = OpenAICompatibleServer(
            backend,
            model_name=name,
            host=args.host,
            port=args.port,
            api_key=api_key,
            max_model_len=args.max_model_len,
            allowed_origins=parse_origins(args.allow_origin),
        )
    except SteerEnvsError as exc:
        parser.exit(2, f"error: {exc}\n")
    warn_if_exposed(args.host, api_key, "OpenAI-compatible model server")
    print(f"serving {args.backend} as {server.spec}{' (API key required)' if api_key else ''}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
