"""Any registered env as an OpenEnv server (``steer-envs serve-env ENV_ID``), and the OpenEnv client that drives it.

Why OpenEnv: it is the env-as-a-service protocol TRL and other LLM-RL trainers consume: ``reset`` / ``step`` /
``state`` over a WebSocket (``/ws``, one session per connection, each with its own env replica) plus HTTP routes
(``/health``, ``/schema``, ``/metadata``, stateless ``/reset``). The server is OpenEnv's own
(:class:`openenv.core.env_server.HTTPEnvServer`, ``openenv-core==0.3.0``) over :class:`GymnasiumEnvironment`, a thin
OpenEnv ``Environment`` around ``gymnasium.make(env_id)``; it bounds the sessions (``max_sessions``, 429 past
it) and closes those idle longer than ``idle_timeout_s`` (OpenEnv's reaper).

OpenEnv's HTTP ``/step`` is stateless (a fresh env per request), so for trainers that speak plain HTTP the server
adds session routes on the same session table: ``POST /sessions`` -> ``{"session_id"}``, then
``POST /sessions/{id}/reset`` (``{"seed", "task_id", "options"}``), ``POST /sessions/{id}/step``
(``{"action": text or index}``), ``GET /sessions/{id}/state``, ``DELETE /sessions/{id}``.

Safety, as ``serve-retriever`` (:mod:`steer_envs.serving`): loopback by default and a loud warning beyond it, an
optional API key on every route but ``/health`` and the docs (WebSocket handshakes too: 403 without it), bounded
bodies (413, announced or chunked) and actions (``max_action_chars``, 413), and 4xx answers that say what was wrong
(422 malformed body, 404 unknown session, 409 a step after the episode ended). Every body and WebSocket frame passes
:mod:`steer_envs.validation` before a handler runs (nesting, integer size, lone surrogates), web pages of other
origins are refused (:func:`steer_envs.serving.origin_allowed`), slow clients get 408, and ``max_sessions`` bounds
the live env replicas of every transport (:class:`EnvSlots`). Observations and ``info`` travel as JSON (arrays as
lists). :class:`SteerEnvClient` is OpenEnv's ``EnvClient`` for these servers (``.sync()`` for blocking use).

Install with ``pip install "steer-envs[openenv]"``; ``import steer_envs`` never imports this module.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import (
    Action,
    ConcurrencyConfig,
    EnvironmentMetadata,
    Observation,
    State,
    StepResponse,
)
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ..errors import SteerEnvsError
from ..retrieval.server import error_response
from ..serving import (
    BODY_TIMEOUT_S,
    HEADER_TIMEOUT_S,
    UvicornServer,
    authorized,
    origin_allowed,
    origin_refusal,
)
from ..validation import (
    PrefixChecks,
    RequestError,
    check_text,
    parse_json_async,
    require_object,
    strict_seed,
)

MAX_ACTION_CHARS = 16384
MAX_BODY_BYTES = 1 << 20


@dataclass(frozen=True)
class EnvServerConfig:
    """What ``serve-env`` serves and its limits. ``env_kwargs`` go to ``gymnasium.make`` (``executor=``, ...)."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    max_sessions: int = 64
    idle_timeout_s: float = 600.0
    max_action_chars: int = MAX_ACTION_CHARS
    max_body_bytes: int = MAX_BODY_BYTES
    api_key: str | None = None
    #: browser origins served besides this machine's pages ("*": any); others get 403 (WebSocket handshakes too)
    allowed_origins: tuple[str, ...] = ()
    header_timeout_s: float = HEADER_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise SteerEnvsError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if self.idle_timeout_s <= 0:
            raise SteerEnvsError(f"idle_timeout_s must be positive seconds, got {self.idle_timeout_s}")
        if self.max_action_chars < 1 or self.max_body_bytes < 1:
            raise SteerEnvsError("max_action_chars and max_body_bytes must be positive")
        if self.header_timeout_s <= 0 or self.body_timeout_s <= 0:
            raise SteerEnvsError(
                "header_timeout_s and body_timeout_s must be positive seconds (--header-timeout, --body-timeout)"
            )


class SteerAction(Action):
    """One env action: a text action (``action_mode="text"``) or an index (``action_mode="discrete"``)."""

    action: StrictInt | str = Field(
        description="a text action (e.g. 'pass', a note, '<search> q </search>') or an "
        "integer index for discrete action modes"
    )


class SteerObservation(Observation):
    """The gymnasium observation and ``info`` as JSON (``reward`` and ``done`` are OpenEnv's own fields)."""

    observation: dict[str, Any] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)
    truncated: bool = False


class SteerState(State):
    env_id: str = ""
    task_id: str | None = None
    episode_return: float = 0.0
    done: bool = False


def jsonable(value: Any) -> Any:
    """``value`` with numpy arrays and scalars turned into lists and numbers (what JSON can carry)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class EnvSlots:
    """The bound on live env replicas, whatever made them: WebSocket and HTTP sessions, and OpenEnv's stateless
    ``/reset``, ``/step``, ``/state`` and ``/metadata`` (each builds a throwaway env). A replica takes a slot when
    built and gives it back when closed; past ``limit`` building one is refused with 429."""

    def __init__(self, limit: int) -> None:
        self.limit, self.live = limit, 0
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        return self.live >= self.limit

    def refusal(self) -> str:
        return (
            f"all {self.limit} env replicas are in use; close a session (DELETE /sessions/ID or a WebSocket "
            "'close'), wait for idle ones to expire, or restart with a larger --max-sessions"
        )

    def take(self) -> None:
        with self._lock:
            if self.live >= self.limit:
                raise RequestError(429, self.refusal())
            self.live += 1

    def give_back(self) -> None:
        with self._lock:
            self.live = max(0, self.live - 1)


class GymnasiumEnvironment(Environment):
    """An OpenEnv ``Environment`` over ``gymnasium.make(env_id, **env_kwargs)``: one per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session gets its own replica; replicas share read-only data

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        max_action_chars: int = MAX_ACTION_CHARS,
        slots: EnvSlots | None = None,
    ) -> None:
        super().__init__()
        import gymnasium as gym

        import steer_envs  # noqa: F401 - registers the ids

        if slots is not None:
            slots.take()
        self._slots = slots
        try:
            self.env = gym.make(env_id, **(env_kwargs or {}))
        except BaseException:
            self._give_back_slot()
            raise
        self.max_action_chars = max_action_chars
        self._state = SteerState(env_id=env_id)
        self._started = False
        self._closed = False

    def _give_back_slot(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots.give_back()

    def _check_open(self) -> None:
        if self._closed:
            raise RequestError(
                404, "this session was closed (deleted, or idle past the server's --idle-timeout); open a new one"
            )

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> SteerObservation:
        if kwargs:
            raise RequestError(
                422, f"unknown reset fields {sorted(kwargs)}; reset takes seed, task_id, options, episode_id"
            )
        body = _validated(ResetBody, {"seed": seed, "episode_id": episode_id, "task_id": task_id, "options": options})
        self._check_open()
        opts = dict(body.options or {})
        if body.task_id is not None:
            opts["task_id"] = body.task_id
        obs, info = self.env.reset(seed=body.seed, options=opts or None)
        self._started = True
        self._state = SteerState(env_id=self._state.env_id, episode_id=body.episode_id, task_id=info.get("task_id"))
        return SteerObservation(observation=jsonable(obs), info=jsonable(info), reward=None, done=False)

    def step(self, action: SteerAction, timeout_s: float | None = None, **kwargs: Any) -> SteerObservation:
        """One env step; every check runs first, so a refused step leaves the episode as it was."""
        self._check_open()
        if not self._started:
            raise RequestError(
                409,
                "this env has not been reset: reset first (a WebSocket session or "
                "POST /sessions/{id}/reset; the stateless POST /step cannot continue an episode)",
            )
        if self._state.done:
            raise RequestError(409, "the episode has ended; reset to start another")
        value = action.action
        if isinstance(value, str) and len(value) > self.max_action_chars:
            raise RequestError(
                413,
                f"the action has {len(value)} characters; this server accepts at most "
                f"{self.max_action_chars} (serve-env --max-action-chars)",
            )
        if isinstance(value, str):
            check_text(value, "the action")
        obs, reward, terminated, truncated, info = self.env.step(value)
        s = self._state
        self._state = SteerState(
            env_id=s.env_id,
            episode_id=s.episode_id,
            task_id=s.task_id,
            step_count=s.step_count + 1,
            episode_return=s.episode_return + float(reward),
            done=bool(terminated or truncated),
        )
        return SteerObservation(
            observation=jsonable(obs),
            info=jsonable(info),
            reward=float(reward),
            done=bool(terminated),
            truncated=bool(truncated),
        )

    @property
    def state(self) -> SteerState:
        return self._state

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.env.close()
        finally:
            self._give_back_slot()


class ResetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: StrictInt | None = Field(None, ge=0)
    task_id: str | None = Field(None, max_length=256)
    options: dict[str, Any] | None = None
    episode_id: str | None = Field(None, max_length=255)


class StepBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: StrictInt | str


def _validated(model: type[BaseModel], payload: dict[str, Any]) -> Any:
    """``payload`` checked by ``model`` (strict types: ``true`` is no seed) and :mod:`steer_envs.validation`
    (no lone surrogates), or a 422 that names each wrong field."""
    from ..validation import check_value

    check_value(payload)
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise RequestError(422, _validation_message(exc)) from None


#: the WebSocket connection the current task serves (set by :class:`_Guard`, read by :class:`_SessionServer`)
_WS_LINK: contextvars.ContextVar[_SocketLink | None] = contextvars.ContextVar("steer_envs_ws_link", default=None)
#: the HTTP methods whose body the guard reads and checks before any handler runs
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: the scope key under which the guard leaves a request's decoded body (None: a blank body)
_PARSED = "steer_envs.parsed_body"


class _SocketLink:
    """One WebSocket connection's tie to its session: when the session is closed from outside (the idle reaper),
    ``reaped`` wakes the connection's receive, which then closes the socket instead of serving a dead env."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.reaped_event = asyncio.Event()
        self.closed = False

    def reaped(self) -> None:
        self.reaped_event.set()


def _ws_error(message: str, code: str) -> dict[str, Any]:
    return {"type": "websocket.send", "text": json.dumps({"type": "error", "data": {"message": message, "code": code}})}


async def _ws_problem(message: dict[str, Any]) -> tuple[str, str] | None:
    """What is wrong with one WebSocket frame (message, OpenEnv error code), or None: a frame must be a text frame
    holding a JSON object with a string ``type`` and, when present, an object ``data``."""
    text = message.get("text")
    if text is None:
        return (
            'binary frames are not accepted; send JSON text frames like {"type": "step", "data": {"action": "pass"}}',
            "INVALID_JSON",
        )
    try:
        payload = await parse_json_async(text)
    except RequestError as exc:
        return str(exc).replace("the body", "the message"), "INVALID_JSON"
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        return (
            "a message must be a JSON object with a string 'type' (reset, step, state, close), got "
            f"{json.dumps(payload)[:80]}",
            "VALIDATION_ERROR",
        )
    if "data" in payload and not isinstance(payload["data"], dict):
        return f"'data' must be a JSON object, got {type(payload['data']).__name__}", "VALIDATION_ERROR"
    return None


def _check_reset_payload(payload: dict[str, Any]) -> None:
    """OpenEnv's stateless ``/reset`` model is lax (``true`` would become seed 1): the seed is checked strictly."""
    strict_seed(payload.get("seed"))


#: the WebSocket routes whose connection builds an env (its session)
_ENV_SOCKETS = frozenset({"/ws", "/mcp"})
#: the HTTP routes that build a throwaway env per request (OpenEnv's stateless routes; ``POST /sessions`` answers
#: its own 429, naming the sessions in use)
_ENV_ROUTES = frozenset({"/reset", "/step"})


def _builds_env(path: str, payload: Any) -> bool:
    """Whether a POST builds a throwaway env or a session the guard refuses: the stateless routes, and MCP's JSON-RPC
    calls but those that name an open session or close one (``openenv/session/create`` and session-less
    ``tools/*`` build one)."""
    if path in _ENV_ROUTES:
        return True
    if path != "/mcp" or not isinstance(payload, dict):
        return False
    params: dict[str, Any] = payload["params"] if isinstance(payload.get("params"), dict) else {}
    if payload.get("method") == "openenv/session/close":
        return False
    return payload.get("method") == "openenv/session/create" or not params.get("session_id")


#: checks of a route's decoded body beyond :func:`parse_json`, for routes whose own model is lax
_PAYLOAD_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {"/reset": _check_reset_payload}


class _Guard:
    """ASGI middleware in front of every route and WebSocket: the Origin allow-list (403 / a refused handshake),
    the API key (401 / a refused handshake), the body size limit whatever the framing (413: announced or chunked),
    the shared JSON checks of :mod:`steer_envs.validation` before any handler runs (422), 429 for a request that
    would build an env while all ``--max-sessions`` slots are taken (a WebSocket handshake too: refused with HTTP
    429 and a JSON body), and per WebSocket frame the same checks (an error frame; the session stays usable) and
    the close of a socket whose session was reaped.
    """

    def __init__(self, app: Any, config: EnvServerConfig, slots: EnvSlots) -> None:
        self.app, self.config, self.slots = app, config, slots

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refusal = self._refusal(scope)
        if refusal is not None:
            if scope["type"] == "websocket":
                return await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403
            return await error_response(*refusal)(scope, receive, send)
        if scope["type"] == "http":
            return await self._http(scope, receive, send)
        if scope.get("path") in _ENV_SOCKETS and self.slots.full:
            return await self._refuse_handshake(scope, send, 429, self.slots.refusal())
        return await self._websocket(scope, receive, send)

    @staticmethod
    async def _refuse_handshake(scope, send, status: int, message: str) -> None:
        """Refuse a WebSocket handshake with an HTTP answer and a JSON body (ASGI's denial response; a close before
        accept, which the client sees as 403, where the server does not offer it)."""
        if "websocket.http.response" not in scope.get("extensions", {}):
            return await send({"type": "websocket.close", "code": 1013})
        body = json.dumps({"detail": message}).encode()
        await send(
            {
                "type": "websocket.http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "websocket.http.response.body", "body": body})

    def _refusal(self, scope) -> tuple[int, str] | None:
        headers = Headers(scope=scope)
        if not origin_allowed(headers, self.config.allowed_origins):
            return 403, origin_refusal(headers)
        if not authorized(headers, scope.get("path", ""), self.config.api_key):
            return 401, "missing or wrong API key; send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'"
        length = headers.get("content-length")
        if scope["type"] == "http" and length and length.isdigit() and int(length) > self.config.max_body_bytes:
            return 413, f"request body of {length} bytes exceeds the limit of {self.config.max_body_bytes} bytes"
        return None

    async def _http(self, scope, receive, send):
        if scope.get("method") not in _BODY_METHODS:
            return await self.app(scope, receive, send)
        try:
            body = await _read_limited(receive, self.config.max_body_bytes)
            payload = await parse_json_async(body) if body.strip() else None
            scope[_PARSED] = payload  # the session routes read it here instead of decoding the body again
            check = _PAYLOAD_CHECKS.get(scope.get("path", ""))
            if check is not None and isinstance(payload, dict):
                check(payload)
            if self.slots.full and _builds_env(scope.get("path", ""), payload):
                raise RequestError(429, self.slots.refusal())
        except RequestError as exc:
            return await error_response(exc.status, str(exc), exc.close)(scope, receive, send)
        return await self.app(scope, _replay(body, receive), send)

    async def _websocket(self, scope, receive, send):
        from starlette.websockets import WebSocketDisconnect

        link = _SocketLink()
        token = _WS_LINK.set(link)
        try:
            await self.app(scope, self._ws_receive(link, receive, send), self._ws_send(link, send))
        except WebSocketDisconnect:
            # OpenEnv's /ws handler closes a socket the client already closed after its "close" message: not an
            # error (it printed a traceback for every session a client ended)
            pass
        finally:
            _WS_LINK.reset(token)

    def _ws_receive(self, link: _SocketLink, receive, send):
        pending: list[asyncio.Task] = []

        async def next_message():
            while True:
                if not pending:
                    pending.append(asyncio.ensure_future(receive()))
                reaped = asyncio.ensure_future(link.reaped_event.wait())
                done, _ = await asyncio.wait({pending[0], reaped}, return_when=asyncio.FIRST_COMPLETED)
                reaped.cancel()
                if pending[0] not in done:
                    pending.pop().cancel()
                    return await self._close_reaped(link, send)
                message = pending.pop().result()
                problem = await _ws_problem(message) if message["type"] == "websocket.receive" else None
                if problem is None:
                    return message
                await send(_ws_error(*problem))

        return next_message

    async def _close_reaped(self, link: _SocketLink, send) -> dict[str, Any]:
        timeout = self.config.idle_timeout_s
        await send(
            _ws_error(
                f"the session was closed: idle longer than {timeout:g} s (--idle-timeout); reconnect to start another",
                "SESSION_ERROR",
            )
        )
        await send({"type": "websocket.close", "code": 1001, "reason": "session idle past --idle-timeout"})
        link.closed = True
        return {"type": "websocket.disconnect", "code": 1001}

    @staticmethod
    def _ws_send(link: _SocketLink, send):
        async def guarded(message):
            if not link.closed:  # the handler's own close after a reaped session's close is dropped
                await send(message)

        return guarded


async def _read_limited(receive, limit: int) -> bytes:
    """The whole request body, refused with 413 once more than ``limit`` bytes arrived (chunked bodies too), or as
    soon as the part that arrived nests too deeply or holds too many items (:class:`PrefixChecks`)."""
    chunks: list[bytes] = []
    size, more, checks = 0, True, PrefixChecks()
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise RequestError(400, "the client disconnected before the body arrived")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"request body of more than {limit} bytes exceeds the limit of {limit} bytes")
        chunks.append(chunk)
        more = message.get("more_body", False)
        if more:
            await checks.grown(chunks, size)
    return b"".join(chunks)


def _replay(body: bytes, receive):
    """A receive that gives the app ``body`` (already read and checked) once, then the real connection's events."""
    sent = False

    async def replayed():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


class _SessionServer(HTTPEnvServer):
    """OpenEnv's server with one session lifecycle: a session closed from outside (the idle reaper) also closes the
    WebSocket that holds it, so an env that lost its slot can never be stepped."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_close: dict[str, Callable[[], None]] = {}

    async def _create_session(self):
        session_id, env = await super()._create_session()
        link = _WS_LINK.get()
        if link is not None and link.session_id is None:
            link.session_id = session_id
            self._on_close[session_id] = link.reaped
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        notify = self._on_close.pop(session_id, None)
        await super()._destroy_session(session_id)
        if notify is not None:
            notify()


def _validation_message(exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(x) for x in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()]
    return "malformed body: " + "; ".join(parts)


def _warm_up(env: GymnasiumEnvironment) -> None:
    """One reset and one step before any session exists: the replicas share process-wide caches (tasks, corpus
    index, sentence encoder), and 16 sessions opening at once would otherwise each load them in parallel (measured:
    1.75 GB and WebSocket keep-alive timeouts on 2 cores)."""
    from gymnasium import spaces

    discrete = isinstance(env.env.action_space, spaces.Discrete)
    try:
        env.reset(seed=0)
        # a pass, then an intervention (the simulated executors read notes with a sentence encoder, loaded on the
        # first note)
        for action in (0, 1) if discrete else ("pass", "Verify the evidence: re-read the retrieved documents."):
            if env.state.done:
                break
            env.step(SteerAction(action=action))
        getattr(env.env.unwrapped, "retriever", None)  # GuidedSearch builds its retriever on first use
    finally:
        env.close()


def build_app(config: EnvServerConfig) -> tuple[FastAPI, HTTPEnvServer]:
    """The FastAPI app: OpenEnv's routes (``/ws``, ``/reset``, ``/step``, ``/state``, ``/schema``, ``/health``,
    ``/metadata``) plus the session routes, behind the API key and size guard. Builds one env first, so a bad id
    or option fails here with the env's own message."""
    _warm_up(GymnasiumEnvironment(config.env_id, dict(config.env_kwargs), config.max_action_chars))
    slots = EnvSlots(config.max_sessions)
    factory = functools.partial(
        GymnasiumEnvironment, config.env_id, dict(config.env_kwargs), config.max_action_chars, slots
    )
    server = _SessionServer(
        factory,
        SteerAction,
        SteerObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=config.max_sessions, session_timeout=config.idle_timeout_s
        ),
    )
    app = FastAPI(
        title=f"steer-envs OpenEnv server: {config.env_id}",
        version="1",
        description="OpenEnv reset/step/state over WebSocket (/ws) and HTTP sessions (/sessions).",
    )
    app.state.openenv = server
    app.state.config = config
    server.register_routes(app)
    _answer_without_an_env(app, config)
    _add_session_routes(app)

    @app.exception_handler(RequestError)
    async def request_error(request: Request, exc: RequestError):
        return error_response(exc.status, str(exc), exc.close)

    @app.exception_handler(SteerEnvsError)
    async def env_error(request: Request, exc: SteerEnvsError):
        return error_response(400, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if exc.status_code in (404, 405):
            return error_response(
                exc.status_code,
                f"no {request.method} endpoint {request.url.path}; see GET /docs (OpenEnv routes and /sessions)",
            )
        return error_response(exc.status_code, str(exc.detail))

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        parts = [f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return error_response(422, "malformed body: " + "; ".join(parts))

    app.add_middleware(_Guard, config=config, slots=slots)
    return app, server


def metadata(config: EnvServerConfig) -> EnvironmentMetadata:
    """What ``GET /metadata`` answers: the served env and the package version."""
    from .. import __version__

    return EnvironmentMetadata(
        name=config.env_id,
        version=__version__,
        description=f"steer-envs {config.env_id} over OpenEnv (reset/step/state over /ws and HTTP sessions)",
    )


def _answer_without_an_env(app: FastAPI, config: EnvServerConfig) -> None:
    """``GET /metadata`` and the stateless ``GET /state`` from the config instead of a throwaway env: OpenEnv builds
    one per request (a ``gymnasium.make`` to read a constant), which made two read-only routes cost an env replica
    each and answer 429 whenever the ``--max-sessions`` slots were taken."""
    app.router.routes[:] = [
        r
        for r in app.router.routes
        if getattr(r, "path", None) not in ("/metadata", "/state") or "GET" not in getattr(r, "methods", ())
    ]

    @app.get(
        "/metadata", response_model=EnvironmentMetadata, tags=["Environment Info"], summary="Get environment metadata"
    )
    async def get_metadata(request: Request):
        return metadata(request.app.state.config)

    @app.get(
        "/state",
        response_model=SteerState,
        tags=["State Management"],
        summary="The state of a fresh env (OpenEnv's stateless route; a session's: GET /sessions/{id}/state)",
    )
    async def get_state(request: Request):
        return SteerState(env_id=request.app.state.config.env_id)


class SessionCreated(BaseModel):
    session_id: str
    max_sessions: int
    idle_timeout_s: float


class ErrorBody(BaseModel):
    """Every 4xx answer: what was wrong and how to fix it."""

    detail: str


_ERRORS = {
    404: "unknown, closed or expired session",
    409: "a step before a reset or after the episode ended",
    413: "a body, action or JSON item count past the server's limits",
    422: "a body that is not acceptable JSON or has wrong fields",
    429: "all --max-sessions env slots in use",
}
#: the session routes as OpenAPI links: a client (or a stateful test) chains a session's id from POST /sessions
_SESSION_OPERATIONS = ("reset_session", "step_session", "session_state", "delete_session")


def _links_to_session(session_id: str) -> dict[str, Any]:
    return {op: {"operationId": op, "parameters": {"session_id": session_id}} for op in _SESSION_OPERATIONS}


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A route's JSON body in the OpenAPI schema (the guard reads and checks the body, not FastAPI)."""
    return {"requestBody": {"required": False, "content": {"application/json": {"schema": model.model_json_schema()}}}}


def _add_session_routes(app: FastAPI) -> None:
    """HTTP sessions on OpenEnv's own session table (the same bound and idle reaper as the WebSocket sessions).
    Handlers reach the server through ``request.app.state`` (no closures: see :func:`steer_envs.retrieval.server
    .create_app`)."""

    def session(request: Request, session_id: str, expected: Any = None) -> tuple[HTTPEnvServer, GymnasiumEnvironment]:
        """The session's server and env; 404 when it is gone, or (``expected``: the env a request found when it
        began) when it was closed or replaced while the request's body was still arriving."""
        server: HTTPEnvServer = request.app.state.openenv
        env = server._sessions.get(session_id)
        if env is None or (expected is not None and env is not expected):
            timeout = request.app.state.config.idle_timeout_s
            raise RequestError(
                404,
                f"unknown session id {session_id!r}: it was never created, was closed, or idled "
                f"longer than {timeout:g} s; create one with POST /sessions",
            )
        return server, env

    async def parsed(request: Request, model: type[BaseModel]) -> Any:
        """The body the guard decoded and checked (a blank body: no fields), validated by ``model``."""
        payload = request.scope.get(_PARSED)
        return _validated(model, {} if payload is None else require_object(payload))

    def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
        return {code: {"model": ErrorBody, "description": _ERRORS[code]} for code in codes}

    @app.post(
        "/sessions",
        status_code=201,
        tags=["Sessions"],
        summary="open a session (its own env replica)",
        operation_id="create_session",
        response_model=SessionCreated,
        responses={
            201: {"description": "the new session", "links": _links_to_session("$response.body#/session_id")},
            **errors(413, 422, 429),
        },
    )
    async def create(request: Request):
        from openenv.core.env_server.exceptions import (
            EnvironmentFactoryError,
            SessionCapacityError,
        )

        server: HTTPEnvServer = request.app.state.openenv
        try:
            session_id, _ = await server._create_session()
        except SessionCapacityError as exc:
            raise RequestError(
                429,
                f"all {exc.max_sessions} sessions are in use; close one (DELETE /sessions/ID), "
                "wait for idle ones to expire, or restart with a larger --max-sessions",
            ) from None
        except EnvironmentFactoryError as exc:
            if isinstance(exc.__cause__, RequestError):  # no env slot left (stateless requests hold some)
                raise exc.__cause__ from None
            raise
        config = request.app.state.config
        return SessionCreated(
            session_id=session_id, max_sessions=config.max_sessions, idle_timeout_s=config.idle_timeout_s
        )

    same_session = _links_to_session("$request.path.session_id")

    @app.post(
        "/sessions/{session_id}/reset",
        tags=["Sessions"],
        summary="start an episode",
        operation_id="reset_session",
        response_model=StepResponse,
        openapi_extra=_body_schema(ResetBody),
        responses={200: {"description": "the first observation", "links": same_session}, **errors(404, 413, 422)},
    )
    async def reset(request: Request, session_id: str):
        server, env = session(request, session_id)
        body = await parsed(request, ResetBody)
        session(request, session_id, expected=env)  # closed while the body arrived: never reset a closed env
        obs = await server._run_in_session_executor(session_id, env.reset, **body.model_dump(exclude_none=True))
        server._update_session_activity(session_id)
        return serialize_observation(obs)

    @app.post(
        "/sessions/{session_id}/step",
        tags=["Sessions"],
        summary="one action",
        operation_id="step_session",
        response_model=StepResponse,
        openapi_extra=_body_schema(StepBody),
        responses={200: {"description": "the next observation", "links": same_session}, **errors(404, 409, 413, 422)},
    )
    async def step(request: Request, session_id: str):
        server, env = session(request, session_id)
        body = await parsed(request, StepBody)
        session(request, session_id, expected=env)  # closed while the body arrived: never step a closed env
        obs = await server._run_in_session_executor(session_id, env.step, SteerAction(action=body.action))
        server._update_session_activity(session_id, increment_step=True)
        return serialize_observation(obs)

    @app.get(
        "/sessions/{session_id}/state",
        tags=["Sessions"],
        summary="the episode so far",
        operation_id="session_state",
        response_model=SteerState,
        responses={200: {"description": "the session's state", "links": same_session}, **errors(404)},
    )
    async def state(request: Request, session_id: str):
        _, env = session(request, session_id)  # reading the state does not keep a session alive
        return env.state

    @app.delete(
        "/sessions/{session_id}",
        status_code=204,
        tags=["Sessions"],
        summary="close the session",
        operation_id="delete_session",
        responses={204: {"description": "closed"}, **errors(404)},
    )
    async def close(request: Request, session_id: str):
        server, _ = session(request, session_id)
        await server._destroy_session(session_id)
        return Response(status_code=204)


class EnvServer(UvicornServer):
    """The OpenEnv server on a bound socket (``url``); ``start()`` serves from a thread, ``serve_forever()`` blocks."""

    def __init__(self, config: EnvServerConfig, verbose: bool = False) -> None:
        self.config = config
        self.app, self.openenv = build_app(config)
        super().__init__(
            self.app,
            config.host,
            config.port,
            verbose=verbose,
            header_timeout_s=config.header_timeout_s,
            body_timeout_s=config.body_timeout_s,
            ws_max_bytes=config.max_body_bytes,
        )


class SteerEnvClient(EnvClient):
    """OpenEnv's WebSocket client for a ``serve-env`` server: ``await client.reset(seed=..., task_id=...)``,
    ``await client.step("pass")`` (a text action or an index), ``await client.state()``; ``.sync()`` gives the
    blocking version. ``api_key`` is sent as ``X-API-Key`` on the handshake."""

    _ws: Any  # EnvClient's socket (None until connected)

    def __init__(self, base_url: str, api_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._api_key = api_key

    async def connect(self) -> SteerEnvClient:
        if self._ws is not None or self._api_key is None:
            return await super().connect()
        from websockets.asyncio.client import connect as ws_connect

        try:
            self._ws = await ws_connect(
                self._ws_url,
                open_timeout=self._connect_timeout,
                max_size=self._max_message_size,
                additional_headers={"X-API-Key": self._api_key},
            )
        except Exception as exc:
            raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
        return self

    def _step_payload(self, action: Any) -> dict[str, Any]:
        value = action.action if isinstance(action, SteerAction) else action
        return {"action": value.item() if isinstance(value, np.generic) else value}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult:
        obs = payload.get("observation", {})
        observation = SteerObservation(
            observation=obs.get("observation", {}),
            info=obs.get("info", {}),
            truncated=bool(obs.get("truncated", False)),
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done", False)))

    def _parse_state(self, payload: dict[str, Any]) -> SteerState:
        return SteerState(**payload)


__all__ = [
    "MAX_ACTION_CHARS",
    "MAX_BODY_BYTES",
    "EnvServer",
    "EnvServerConfig",
    "GymnasiumEnvironment",
    "SteerAction",
    "SteerEnvClient",
    "SteerObservation",
    "SteerState",
    "build_app",
    "jsonable",
]
