"""``steer-envs serve-env ENV_ID``: serve any registered env as an OpenEnv server
(:mod:`steer_envs.integrations.openenv`).

OpenEnv is imported only when the command runs, so the CLI (and ``import steer_envs``) stays light without the
``openenv`` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..serving import (
    API_KEY_ENV,
    BODY_TIMEOUT_S,
    HEADER_TIMEOUT_S,
    parse_origins,
    resolve_api_key,
    serve_until_stopped,
    warn_if_exposed,
)
from .common import add_allow_origin, add_protocol_arguments, protocol_kwargs

DEFAULTS = {"max_sessions": 64, "idle_timeout": 600.0, "max_action_chars": 16384, "max_body_bytes": 1 << 20}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "env_id", help="a registered id, e.g. steer_envs/GuidedSearch-v0 (the namespace may be left out)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1: this machine only; 0.0.0.0 exposes it to the network)",
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    add_protocol_arguments(
        parser,
        include=("executor",),
        defaults={"executor": None},
        overrides={"executor": {"help": "executor spec of the supervision envs (default: the env's own, sim:default)"}},
    )
    parser.add_argument(
        "--env-kwargs",
        default="{}",
        help='more gymnasium.make options as JSON, e.g. \'{"split": "dev", "action_mode": "text"}\'',
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULTS["max_sessions"],
        help="concurrent sessions (each its own env replica); more get 429 (default 64)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULTS["idle_timeout"],
        help="seconds after which an idle session is closed (default 600)",
    )
    parser.add_argument(
        "--max-action-chars",
        type=int,
        default=DEFAULTS["max_action_chars"],
        help="longest text action accepted (default 16384)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULTS["max_body_bytes"],
        help="largest HTTP request body accepted (default 1 MiB)",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help=f"require this key on every route but /health and the docs (Authorization: Bearer KEY "
        f"or X-API-Key: KEY; WebSocket handshakes too); default ${API_KEY_ENV}",
    )
    add_allow_origin(parser)
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=HEADER_TIMEOUT_S,
        help=f"seconds a client has to send a request's headers (default {HEADER_TIMEOUT_S:g}; 408)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=BODY_TIMEOUT_S,
        help=f"seconds a client has to send a request's body (default {BODY_TIMEOUT_S:g}; 408)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    add_protocol_arguments(parser, include=("data_dir",))


def _env_kwargs(args: argparse.Namespace) -> dict:
    from ..errors import SteerEnvsError

    try:
        kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as exc:
        raise SteerEnvsError(f'--env-kwargs must be a JSON object ({exc}), e.g. \'{{"split": "dev"}}\'') from None
    if not isinstance(kwargs, dict):
        raise SteerEnvsError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
    kwargs.update(protocol_kwargs(args, drop_none=True))  # a flag given wins over the same key in --env-kwargs
    return kwargs


#: OpenEnv's optional web interface (Gradio), which ``serve-env`` never serves
OPENENV_WEB_INTERFACE = "openenv.core.env_server.web_interface"


def run(args: argparse.Namespace) -> int:
    from ..envs.registration import NAMESPACE, env_ids
    from ..errors import SteerEnvsError, unknown_name

    env_id = args.env_id if "/" in args.env_id else f"{NAMESPACE}/{args.env_id}"
    if env_id not in env_ids():
        raise unknown_name("env_id", args.env_id, tuple(env_ids()))
    kwargs = _env_kwargs(args)
    # OpenEnv's server package imports its Gradio web interface when it is imported (seconds of CPU at every
    # start: BENCHMARKS.md, Cold start); this server never serves it, so this process declines that import as
    # Python declines a missing module (OpenEnv then leaves the web interface out, as without Gradio)
    sys.modules.setdefault(OPENENV_WEB_INTERFACE, None)  # type: ignore[arg-type]
    try:
        from ..integrations.openenv import EnvServer, EnvServerConfig
    except ImportError as exc:
        raise SteerEnvsError(f'serve-env needs the openenv extra ({exc}); pip install "steer-envs[openenv]"') from None
    api_key = resolve_api_key(args.api_key)
    start = time.perf_counter()
    config = EnvServerConfig(
        env_id,
        kwargs,
        host=args.host,
        port=args.port,
        max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout,
        max_action_chars=args.max_action_chars,
        max_body_bytes=args.max_body_bytes,
        api_key=api_key,
        allowed_origins=parse_origins(args.allow_origin),
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
    )
    server = EnvServer(config, verbose=args.verbose)
    warn_if_exposed(args.host, api_key, "env server")
    print(
        f"serving {env_id} at {server.url} (OpenEnv: WebSocket /ws, POST /reset, GET /schema, GET /health; "
        f"HTTP sessions: POST /sessions; up to {args.max_sessions} sessions, idle ones closed after "
        f"{args.idle_timeout:g} s{'; API key required' if api_key else ''}; ready in "
        f"{time.perf_counter() - start:.1f}s). Ctrl-C stops.",
        flush=True,
    )
    return serve_until_stopped(server)
