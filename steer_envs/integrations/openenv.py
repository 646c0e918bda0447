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
bodies (413) and actions (``max_action_chars``, 413), and 4xx answers that say what was wrong (422 malformed body,
404 unknown session, 409 a step after the episode ended). Observations and ``info`` travel as JSON (arrays as
lists). :class:`SteerEnvClient` is OpenEnv's ``EnvClient`` for these servers (``.sync()`` for blocking use).

Install with ``pip install "steer-envs[openenv]"``; ``import steer_envs`` never imports this module.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import SteerEnvsError
from ..retrieval.server import RequestError, _error, read_body
from ..serving import UvicornServer, authorized

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

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise SteerEnvsError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if self.idle_timeout_s <= 0:
            raise SteerEnvsError(f"idle_timeout_s must be positive seconds, got {self.idle_timeout_s}")
        if self.max_action_chars < 1 or self.max_body_bytes < 1:
            raise SteerEnvsError("max_action_chars and max_body_bytes must be positive")


class SteerAction(Action):
    """One env action: a text action (``action_mode="text"``) or an index (``action_mode="discrete"``)."""

    action: StrictInt | str = Field(description="a text action (e.g. 'pass', a note, '<search> q </search>') or an "
                                                "integer index for discrete action modes")


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


class GymnasiumEnvironment(Environment):
    """An OpenEnv ``Environment`` over ``gymnasium.make(env_id, **env_kwargs)``: one per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session gets its own replica; replicas share read-only data

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None,
                 max_action_chars: int = MAX_ACTION_CHARS) -> None:
        super().__init__()
        import gymnasium as gym

        import steer_envs  # noqa: F401 - registers the ids

        self.env = gym.make(env_id, **(env_kwargs or {}))
        self.max_action_chars = max_action_chars
        self._state = SteerState(env_id=env_id)
        self._started = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              options: dict[str, Any] | None = None, **kwargs: Any) -> SteerObservation:
        if kwargs:
            raise RequestError(422, f"unknown reset fields {sorted(kwargs)}; reset takes seed, task_id, options, "
                                    "episode_id")
        if options is not None and not isinstance(options, dict):
            raise RequestError(422, f"options must be an object, got {type(options).__name__}")
        opts = dict(options or {})
        if task_id is not None:
            opts["task_id"] = task_id
        obs, info = self.env.reset(seed=seed, options=opts or None)
        self._started = True
        self._state = SteerState(env_id=self._state.env_id, episode_id=episode_id, task_id=info.get("task_id"))
        return SteerObservation(observation=jsonable(obs), info=jsonable(info), reward=None, done=False)

    def step(self, action: SteerAction, timeout_s: float | None = None, **kwargs: Any) -> SteerObservation:
        if not self._started:
            raise RequestError(409, "this env has not been reset: reset first (a WebSocket session or "
                                    "POST /sessions/{id}/reset; the stateless POST /step cannot continue an episode)")
        if self._state.done:
            raise RequestError(409, "the episode has ended; reset to start another")
        value = action.action
        if isinstance(value, str) and len(value) > self.max_action_chars:
            raise RequestError(413, f"the action has {len(value)} characters; this server accepts at most "
                                    f"{self.max_action_chars} (serve-env --max-action-chars)")
        obs, reward, terminated, truncated, info = self.env.step(value)
        s = self._state
        self._state = SteerState(env_id=s.env_id, episode_id=s.episode_id, task_id=s.task_id,
                                 step_count=s.step_count + 1, episode_return=s.episode_return + float(reward),
                                 done=bool(terminated or truncated))
        return SteerObservation(observation=jsonable(obs), info=jsonable(info), reward=float(reward),
                                done=bool(terminated), truncated=bool(truncated))

    @property
    def state(self) -> SteerState:
        return self._state

    def close(self) -> None:
        self.env.close()


class ResetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: StrictInt | None = Field(None, ge=0)
    task_id: str | None = Field(None, max_length=256)
    options: dict[str, Any] | None = None
    episode_id: str | None = Field(None, max_length=255)


class StepBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: StrictInt | str


class _Guard:
    """ASGI middleware: the API key on HTTP and WebSocket requests (401 / a refused handshake), and the body size
    limit announced by ``Content-Length`` (413; the session routes also count streamed bodies)."""

    def __init__(self, app: Any, api_key: str | None, max_body_bytes: int) -> None:
        self.app, self.api_key, self.max_body_bytes = app, api_key, max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            headers = Headers(scope=scope)
            if not authorized(headers, scope.get("path", ""), self.api_key):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403
                    return
                return await _error(401, "missing or wrong API key; send 'Authorization: Bearer KEY' or "
                                         "'X-API-Key: KEY'")(scope, receive, send)
            length = headers.get("content-length")
            if scope["type"] == "http" and length and length.isdigit() and int(length) > self.max_body_bytes:
                return await _error(413, f"request body of {length} bytes exceeds the limit of "
                                         f"{self.max_body_bytes} bytes")(scope, receive, send)
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            # OpenEnv's /ws handler closes a socket the client already closed after its "close" message: not an
            # error (it printed a traceback for every session a client ended)
            pass


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
        for action in ((0, 1) if discrete else ("pass", "Verify the evidence: re-read the retrieved documents.")):
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
    factory = functools.partial(GymnasiumEnvironment, config.env_id, dict(config.env_kwargs), config.max_action_chars)
    server = HTTPEnvServer(factory, SteerAction, SteerObservation, concurrency_config=ConcurrencyConfig(
        max_concurrent_envs=config.max_sessions, session_timeout=config.idle_timeout_s))
    app = FastAPI(title=f"steer-envs OpenEnv server: {config.env_id}", version="1",
                  description="OpenEnv reset/step/state over WebSocket (/ws) and HTTP sessions (/sessions).")
    app.state.openenv = server
    app.state.config = config
    server.register_routes(app)
    _add_session_routes(app)

    @app.exception_handler(RequestError)
    async def request_error(request: Request, exc: RequestError):
        return _error(exc.status, str(exc))

    @app.exception_handler(SteerEnvsError)
    async def env_error(request: Request, exc: SteerEnvsError):
        return _error(400, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if exc.status_code in (404, 405):
            return _error(exc.status_code, f"no {request.method} endpoint {request.url.path}; see GET /docs (OpenEnv "
                                           "routes and /sessions)")
        return _error(exc.status_code, str(exc.detail))

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        parts = [f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return _error(422, "malformed body: " + "; ".join(parts))

    app.add_middleware(_Guard, api_key=config.api_key, max_body_bytes=config.max_body_bytes)
    return app, server


def _add_session_routes(app: FastAPI) -> None:
    """HTTP sessions on OpenEnv's own session table (the same bound and idle reaper as the WebSocket sessions).
    Handlers reach the server through ``request.app.state`` (no closures: see :func:`steer_envs.retrieval.server
    .create_app`)."""

    def session(request: Request, session_id: str) -> tuple[HTTPEnvServer, GymnasiumEnvironment]:
        server: HTTPEnvServer = request.app.state.openenv
        env = server._sessions.get(session_id)
        if env is None:
            timeout = request.app.state.config.idle_timeout_s
            raise RequestError(404, f"unknown session id {session_id!r}: it was never created, was closed, or idled "
                                    f"longer than {timeout:g} s; create one with POST /sessions")
        return server, env

    async def parsed(request: Request, model: type[BaseModel]) -> BaseModel:
        import json

        body = await read_body(request, request.app.state.config.max_body_bytes)
        try:
            payload = json.loads(body) if body.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RequestError(422, f"the body is not valid JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise RequestError(422, f"the body must be a JSON object, got {type(payload).__name__}")
        try:
            return model.model_validate(payload)
        except ValidationError as exc:
            raise RequestError(422, _validation_message(exc)) from None

    @app.post("/sessions", status_code=201, tags=["Sessions"], summary="open a session (its own env replica)")
    async def create(request: Request):
        from openenv.core.env_server.exceptions import SessionCapacityError

        server: HTTPEnvServer = request.app.state.openenv
        try:
            session_id, _ = await server._create_session()
        except SessionCapacityError as exc:
            raise RequestError(429, f"all {exc.max_sessions} sessions are in use; close one (DELETE /sessions/ID), "
                                    "wait for idle ones to expire, or restart with a larger --max-sessions") from None
        config = request.app.state.config
        return {"session_id": session_id, "max_sessions": config.max_sessions,
                "idle_timeout_s": config.idle_timeout_s}

    @app.post("/sessions/{session_id}/reset", tags=["Sessions"])
    async def reset(request: Request, session_id: str):
        server, env = session(request, session_id)
        body = await parsed(request, ResetBody)
        obs = await server._run_in_session_executor(session_id, env.reset, **body.model_dump(exclude_none=True))
        server._update_session_activity(session_id)
        return serialize_observation(obs)

    @app.post("/sessions/{session_id}/step", tags=["Sessions"])
    async def step(request: Request, session_id: str):
        server, env = session(request, session_id)
        body = await parsed(request, StepBody)
        obs = await server._run_in_session_executor(session_id, env.step, SteerAction(action=body.action))
        server._update_session_activity(session_id, increment_step=True)
        return serialize_observation(obs)

    @app.get("/sessions/{session_id}/state", tags=["Sessions"])
    async def state(request: Request, session_id: str):
        _, env = session(request, session_id)  # reading the state does not keep a session alive
        return env.state.model_dump()

    @app.delete("/sessions/{session_id}", status_code=204, tags=["Sessions"])
    async def close(request: Request, session_id: str):
        server, _ = session(request, session_id)
        await server._destroy_session(session_id)


class EnvServer(UvicornServer):
    """The OpenEnv server on a bound socket (``url``); ``start()`` serves from a thread, ``serve_forever()`` blocks."""

    def __init__(self, config: EnvServerConfig, verbose: bool = False) -> None:
        self.config = config
        self.app, self.openenv = build_app(config)
        super().__init__(self.app, config.host, config.port, verbose=verbose)


class SteerEnvClient(EnvClient):
    """OpenEnv's WebSocket client for a ``serve-env`` server: ``await client.reset(seed=..., task_id=...)``,
    ``await client.step("pass")`` (a text action or an index), ``await client.state()``; ``.sync()`` gives the
    blocking version. ``api_key`` is sent as ``X-API-Key`` on the handshake."""

    def __init__(self, base_url: str, api_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._api_key = api_key

    async def connect(self) -> "SteerEnvClient":
        if self._ws is not None or self._api_key is None:
            return await super().connect()
        from websockets.asyncio.client import connect as ws_connect

        try:
            self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout, max_size=self._max_message_size,
                                        additional_headers={"X-API-Key": self._api_key})
        except Exception as exc:
            raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
        return self

    def _step_payload(self, action: Any) -> dict[str, Any]:
        value = action.action if isinstance(action, SteerAction) else action
        return {"action": value.item() if isinstance(value, np.generic) else value}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult:
        obs = payload.get("observation", {})
        observation = SteerObservation(observation=obs.get("observation", {}), info=obs.get("info", {}),
                                       truncated=bool(obs.get("truncated", False)), reward=payload.get("reward"),
                                       done=bool(payload.get("done", False)))
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done", False)))

    def _parse_state(self, payload: dict[str, Any]) -> SteerState:
        return SteerState(**payload)


__all__ = [
    "EnvServer", "EnvServerConfig", "GymnasiumEnvironment", "MAX_ACTION_CHARS", "MAX_BODY_BYTES", "SteerAction",
    "SteerEnvClient", "SteerObservation", "SteerState", "build_app", "jsonable",
]
