"""What the project's two HTTP servers share (the retrieval server and the OpenAI-compatible test server): running
a FastAPI app under uvicorn on a socket bound here, an optional API key, and the warning for exposed addresses.

Why bind the socket here: port 0 (any free port) must give the caller its real address before the first request,
and a port in use must fail at once with a clear message, not inside uvicorn's thread. Why an API key: a server
bound beyond loopback on a shared cluster is reachable by everyone on that network; with ``--api-key`` (or
:data:`API_KEY_ENV`) every data endpoint answers 401 unless the request carries ``Authorization: Bearer KEY``
(what OpenAI clients send) or ``X-API-Key: KEY``. ``/health``, ``/docs`` and ``/openapi.json`` stay open.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import re
import socket
import sys
import threading
import time
from typing import Any

from .errors import SteerEnvsError

API_KEY_ENV = "STEER_ENVS_API_KEY"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
OPEN_PATHS = frozenset({"/health", "/", "/docs", "/openapi.json", "/docs/oauth2-redirect", "/redoc"})
#: browser origins served without being listed: pages of this machine (any port)
LOOPBACK_ORIGIN = re.compile(r"^https?://(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d{1,5})?$", re.IGNORECASE)
#: seconds a client has to send a request's headers, then its body, before the connection is dropped (408)
HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def resolve_api_key(given: str | None) -> str | None:
    """``--api-key`` when given, else :data:`API_KEY_ENV`, else None (no key: loopback use)."""
    key = given if given is not None else os.environ.get(API_KEY_ENV)
    return key or None


def exposure_warning(host: str, api_key: str | None, what: str) -> str | None:
    """The loud warning for a bind address beyond loopback (None on loopback)."""
    if is_loopback(host):
        return None
    bar = "!" * 78
    guard = (
        "every request must carry the API key"
        if api_key
        else f"there is NO API key: anyone who can reach this machine can use it (set --api-key or ${API_KEY_ENV})"
    )
    return (
        f"{bar}\nWARNING: the {what} listens on {host}, beyond this machine's loopback interface;\n"
        f"{guard}. Bind 127.0.0.1 unless other machines must reach it.\n{bar}"
    )


def serve_until_stopped(server) -> int:
    """Serve until Ctrl-C (or SIGTERM turned into KeyboardInterrupt), then close the socket: the command's exit
    status (0: stopping is the normal end of a server)."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        print("stopped", file=sys.stderr)
    return 0


def warn_if_exposed(host: str, api_key: str | None, what: str) -> None:
    message = exposure_warning(host, api_key, what)
    if message:
        print(message, file=sys.stderr, flush=True)


def authorized(headers: Any, path: str, api_key: str | None) -> bool:
    """Whether a request may proceed: no key configured, an open path, or the right key in its headers."""
    if api_key is None or path.rstrip("/") in OPEN_PATHS or path in OPEN_PATHS:
        return True
    offered = headers.get("x-api-key")
    if offered is None:
        auth = headers.get("authorization") or ""
        scheme, _, token = auth.partition(" ")
        offered = token.strip() if scheme.lower() == "bearer" else None
    return offered is not None and hmac.compare_digest(offered.encode(), api_key.encode())


def origin_allowed(headers: Any, allowed: tuple[str, ...] = ()) -> bool:
    """Whether a request's ``Origin`` may use the server. No ``Origin``: not a browser page, allowed. A page of this
    machine (:data:`LOOPBACK_ORIGIN`) or one listed in ``allowed`` (``"*"``: any) is allowed; any other page is
    refused, so a web page a user opens can neither drive a WebSocket session nor send a simple (text/plain or form)
    cross-origin POST to a server on their loopback interface."""
    origin = headers.get("origin")
    if origin is None or "*" in allowed:
        return True
    return origin in allowed or LOOPBACK_ORIGIN.match(origin) is not None


def origin_refusal(headers: Any) -> str:
    """The 403 message for an origin :func:`origin_allowed` refused."""
    return (
        f"requests from the web page origin {headers.get('origin')!r} are refused (only this machine's pages "
        "are served); allow it with --allow-origin ORIGIN (or '*' for any), or send the request without an "
        "Origin header"
    )


def parse_origins(values: Any) -> tuple[str, ...]:
    """``--allow-origin`` values (repeated or comma-separated) as a tuple of origins without trailing slashes."""
    found: list[str] = []
    for value in values or ():
        found += [part.strip().rstrip("/") for part in str(value).split(",") if part.strip()]
    return tuple(found)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one), or an error that says what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise SteerEnvsError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port (0 picks a free one) or "
            "stop the process using it"
        ) from None
    sock.set_inheritable(True)
    return sock


def socket_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}:{port}"


def _raw_json_response(status: int, reason: str, detail: str) -> bytes:
    body = json.dumps({"detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


def guarded_protocol(header_timeout_s: float = HEADER_TIMEOUT_S, body_timeout_s: float = BODY_TIMEOUT_S) -> type:
    """uvicorn's h11 protocol with deadlines on slow clients and JSON answers to broken framing.

    Why: uvicorn times out idle keep-alive connections only; a client that sends half its headers, or announces a
    body and trickles it, holds a connection (and a request task) forever. Here a connection has
    ``header_timeout_s`` to complete its headers (from connecting, or from the first byte of a later request) and a
    request ``body_timeout_s`` to complete its body; past either, the answer is 408 and the connection is closed.
    Malformed framing is answered ``400 {"detail": ...}`` instead of uvicorn's plain text."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._deadline = None
            self._arm(header_timeout_s, "headers")

        def _arm(self, seconds: float, what: str) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expire, what)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def data_received(self, data: bytes) -> None:
            before = self.cycle
            super().data_received(data)
            self._watch(before)

        def on_response_complete(self) -> None:
            before = self.cycle
            super().on_response_complete()
            self._watch(before)

        def _watch(self, before: Any) -> None:
            """Arm the deadline that applies now: the body's when a request began, the headers' while a later
            request's first bytes wait in the buffer, none while the app works or the connection idles."""
            cycle = self.cycle
            if self.transport.is_closing():
                self._disarm()
            elif cycle is not before and cycle is not None:
                self._arm(body_timeout_s, "body") if cycle.more_body else self._disarm()
            elif cycle is None or cycle.response_complete:
                if self._deadline is None and self.conn.trailing_data[0]:
                    self._arm(header_timeout_s, "headers")
            elif not cycle.more_body:
                self._disarm()

        def handle_websocket_upgrade(self, event: Any) -> None:
            self._disarm()  # the WebSocket protocol takes over the connection (its own pings and size limits)
            super().handle_websocket_upgrade(event)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _expire(self, what: str) -> None:
            self._deadline = None
            if self.transport.is_closing() or self.transport.get_protocol() is not self:
                return
            cycle = self.cycle
            seconds = body_timeout_s if what == "body" else header_timeout_s
            answer = what == "headers"
            if what == "body" and cycle is not None and not cycle.response_complete:
                answer = not cycle.response_started
                cycle.disconnected = True  # the app's receive() ends; what it sends later is dropped
                cycle.message_event.set()
            if answer:
                self.transport.write(
                    _raw_json_response(
                        408,
                        "Request Timeout",
                        (f"the request's {what} did not arrive within {seconds:g} s; send the whole request at once"),
                    )
                )
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            self._disarm()
            self.transport.write(
                _raw_json_response(
                    400,
                    "Bad Request",
                    (
                        "invalid HTTP request (malformed request line, headers or chunked framing); send a well-formed "
                        "HTTP/1.1 request"
                    ),
                )
            )
            self.transport.close()

    return GuardedH11Protocol


class UvicornServer:
    """A FastAPI app served by uvicorn on a socket bound at construction. ``serve_forever()`` blocks (the CLI;
    uvicorn stops on SIGINT/SIGTERM), ``start()`` serves from a daemon thread (tests, notebooks, benchmarks).
    Slow clients are dropped (:func:`guarded_protocol`); WebSocket messages are bounded by ``ws_max_bytes``."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        verbose: bool = False,
        *,
        header_timeout_s: float = HEADER_TIMEOUT_S,
        body_timeout_s: float = BODY_TIMEOUT_S,
        ws_max_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        import uvicorn

        self.socket = bind_socket(host, port)
        self.url = socket_url(self.socket)
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=verbose,
            log_level="info" if verbose else "warning",
            timeout_keep_alive=30,
            lifespan="on",
            ws_max_size=ws_max_bytes,
            http=guarded_protocol(header_timeout_s, body_timeout_s),
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def server_address(self) -> tuple[str, int]:
        return self.socket.getsockname()[:2]

    def serve_forever(self, poll_interval: float | None = None) -> None:  # noqa: ARG002 - http.server's signature
        self._server.run(sockets=[self.socket])

    def start(self, timeout: float = 30.0) -> UvicornServer:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self.socket]}, daemon=True, name="steer-envs-uvicorn"
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise SteerEnvsError(f"the server at {self.url} did not start within {timeout:g} s")
            time.sleep(0.01)
        return self

    def shutdown(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

    def server_close(self) -> None:
        try:
            self.socket.close()
        except OSError:
            pass
