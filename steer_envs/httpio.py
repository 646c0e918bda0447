"""Reading an HTTP reply body under a deadline, noticing truncation.

Why: a socket timeout bounds each read, not the whole reply, so a server that trickles a byte at a time (an
overloaded proxy, a dying GPU server) would hold a client forever; and ``http.client`` returns a short body
without complaint when the connection closes before ``Content-Length`` bytes arrived. Both clients (the
``openai:`` model backend and the ``http:`` retriever) read replies through :func:`read_body`, so a slow or
truncated reply becomes an ordinary, retried failure.

:class:`KeepAlivePool` holds the ``openai:`` backend's connections: opening a TCP connection per request costs a
handshake (and, against a remote server, a round trip) per model call and leaves sockets in TIME_WAIT by the
thousand in a long run; and a bound on the requests in flight keeps many concurrent episodes from flooding the
server.
"""
from __future__ import annotations

import http.client
import socket
import threading
import time
from urllib.parse import urlparse

CHUNK = 1 << 16


def read_body(response: http.client.HTTPResponse, deadline: float) -> bytes:
    """The whole body of ``response``; ``TimeoutError`` past ``deadline`` (a ``time.monotonic()`` value),
    ``http.client.IncompleteRead`` when the connection closes before the announced length arrived."""
    parts: list[bytes] = []
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the reply was still arriving at the deadline ({sum(map(len, parts))} bytes so far)")
        if response.length == 0:  # all announced bytes arrived (read1 would not notice: it reads 0 bytes)
            break
        chunk = response.read1(CHUNK)
        if not chunk:
            break
        parts.append(chunk)
    body = b"".join(parts)
    missing = response.length  # what Content-Length announced and never came (None: no length announced)
    if missing:
        raise http.client.IncompleteRead(body, missing)
    # marks the response finished, so a kept-alive connection can send its next request (``read1`` never does
    # at the exact end of a Content-Length body; the connection would refuse with ResponseNotReady)
    response.close()
    return body


#: what a kept-alive connection the server has since closed raises on its next request (sent again at once, on a
#: fresh connection: the request never reached the server)
STALE_CONNECTION = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class _NoDelay:
    """``TCP_NODELAY`` on the socket: ``http.client`` sends a body over 2 kB in a second write, which Nagle's
    algorithm holds back until the server acknowledges the headers (a delayed ACK: up to 40 ms a request)."""

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # type: ignore[attr-defined]


class _HTTPConnection(_NoDelay, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_NoDelay, http.client.HTTPSConnection):
    pass


class KeepAlivePool:
    """Keep-alive HTTP connections to one server, at most ``max_in_flight`` requests at once (thread-safe).

    A request waits for a free slot (a semaphore), takes an idle connection or opens one, and gives it back
    when the reply was read whole and the server keeps it open; so the connections held never exceed
    ``max_in_flight``, and a steady stream of requests reuses them. A request that fails on a reused connection
    before any reply (the server closed it while idle) is sent again once on a fresh one; other failures close
    the connection and go to the caller, whose retry policy decides.
    """

    def __init__(self, base_url: str, timeout: float, max_in_flight: int) -> None:
        parsed = urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"{base_url!r} must look like http://HOST:PORT[/path]")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self._cls = _HTTPSConnection if parsed.scheme == "https" else _HTTPConnection
        self._netloc = parsed.netloc
        self.prefix = parsed.path.rstrip("/")
        self.timeout = timeout
        self.max_in_flight = max_in_flight
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._lock = threading.Lock()
        self._idle: list[http.client.HTTPConnection] = []
        self.opened = 0  # connections opened so far (tests, diagnostics)
        self.in_flight = 0
        self.peak_in_flight = 0

    def _open(self) -> http.client.HTTPConnection:
        with self._lock:
            self.opened += 1
        return self._cls(self._netloc, timeout=self.timeout)

    def _checkout(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            if self._idle:
                return self._idle.pop(), True
        return self._open(), False

    def _checkin(self, conn: http.client.HTTPConnection | None) -> None:
        with self._lock:
            self.in_flight -= 1
            if conn is not None:
                self._idle.append(conn)

    @staticmethod
    def _send(conn, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> http.client.HTTPResponse:
        conn.request(method, path, body=body, headers=headers)
        return conn.getresponse()

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
        """``(status, reason, body)`` of ``method path`` (``path`` below the base URL's path); the whole exchange
        is bounded by ``timeout`` seconds from the moment a slot was free. Raises what ``http.client`` and
        :func:`read_body` raise."""
        full = f"{self.prefix}{path}"
        headers = headers or {}
        with self._slots:
            deadline = time.monotonic() + self.timeout
            conn, reused = self._checkout()
            keep: http.client.HTTPConnection | None = None
            try:
                try:
                    response = self._send(conn, method, full, body, headers)
                except STALE_CONNECTION:
                    if not reused:
                        raise
                    conn.close()
                    conn = self._open()
                    response = self._send(conn, method, full, body, headers)
                data = read_body(response, deadline)
                if not response.will_close:
                    keep = conn
                return response.status, response.reason, data
            finally:
                if keep is None:
                    conn.close()
                self._checkin(keep)

    def close(self) -> None:
        """Close the idle connections. The pool stays usable: later requests open new ones, and requests still
        in flight give theirs back as usual."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
