"""What the project's two HTTP servers share (the retrieval server and the OpenAI-compatible test server): running
a FastAPI app under uvicorn on a socket bound here, an optional API key, and the warning for exposed addresses.

Why bind the socket here: port 0 (any free port) must give the caller its real address before the first request,
and a port in use must fail at once with a clear message, not inside uvicorn's thread. Why an API key: a server
bound beyond loopback on a shared cluster is reachable by everyone on that network; with ``--api-key`` (or
:data:`API_KEY_ENV`) every data endpoint answers 401 unless the request carries ``Authorization: Bearer KEY``
(what OpenAI clients send) or ``X-API-Key: KEY``. ``/health``, ``/docs`` and ``/openapi.json`` stay open.
"""
from __future__ import annotations

import hmac
import os
import socket
import sys
import threading
import time
from typing import Any

from .errors import SteerEnvsError

API_KEY_ENV = "STEER_ENVS_API_KEY"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
OPEN_PATHS = frozenset({"/health", "/", "/docs", "/openapi.json", "/docs/oauth2-redirect", "/redoc"})


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
    guard = ("every request must carry the API key" if api_key else
             f"there is NO API key: anyone who can reach this machine can use it (set --api-key or ${API_KEY_ENV})")
    return (f"{bar}\nWARNING: the {what} listens on {host}, beyond this machine's loopback interface;\n"
            f"{guard}. Bind 127.0.0.1 unless other machines must reach it.\n{bar}")


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


class UvicornServer:
    """A FastAPI app served by uvicorn on a socket bound at construction. ``serve_forever()`` blocks (the CLI;
    uvicorn stops on SIGINT/SIGTERM), ``start()`` serves from a daemon thread (tests, notebooks, benchmarks)."""

    def __init__(self, app: Any, host: str, port: int, verbose: bool = False) -> None:
        import uvicorn

        self.socket = bind_socket(host, port)
        self.url = socket_url(self.socket)
        config = uvicorn.Config(app, log_config=None, access_log=verbose, log_level="info" if verbose else "warning",
                                timeout_keep_alive=30, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def server_address(self) -> tuple[str, int]:
        return self.socket.getsockname()[:2]

    def serve_forever(self, poll_interval: float | None = None) -> None:  # noqa: ARG002 - http.server's signature
        self._server.run(sockets=[self.socket])

    def start(self, timeout: float = 30.0) -> "UvicornServer":
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self.socket]}, daemon=True,
                                        name="steer-envs-uvicorn")
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
