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

from . import cooperative

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


class _HTTPSConnection(_NoDelay, http.client.HTTPSConnection):
    pass


class _LibraryConnection:
    """An ``https`` connection through ``http.client`` (TLS, proxies' odd replies: the library's job)."""

    def __init__(self, netloc: str, timeout: float) -> None:
        self.conn = _HTTPSConnection(netloc, timeout=timeout)

    def exchange(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], deadline: float
    ) -> tuple[int, str, bytes, bool]:
        def exchange() -> tuple[int, str, bytes, bool]:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
            data = read_body(response, deadline)
            return response.status, response.reason, data, not response.will_close

        return cooperative.offload(exchange)  # TLS reads cannot wait on a hub: a hub's task hands them to a thread

    def close(self) -> None:
        self.conn.close()


class _PlainConnection:
    """HTTP/1.1 over one plain socket, kept alive: one ``sendall`` per request, replies parsed from a buffer.

    Why not ``http.client``: it costs about 0.25 ms of CPU a request (a file object and an ``email`` header
    parser per reply), which at hundreds of requests a second is most of what a process of concurrent episodes
    spends outside the server. Replies with ``Content-Length``, chunked replies and replies that end with the
    connection are read; failures raise what ``http.client`` raises in the same case (``RemoteDisconnected``
    when the server closed before replying, ``IncompleteRead`` for a short body, ``TimeoutError`` past the
    deadline or on a silent socket), so callers treat both transports alike.
    """

    def __init__(self, netloc: str, timeout: float) -> None:
        host, _, port = netloc.rpartition(":") if netloc.rpartition(":")[2].isdigit() else (netloc, "", "80")
        self.host, self.port, self.netloc, self.timeout = host.strip("[]"), int(port), netloc, timeout
        self.sock: socket.socket | None = None
        self.buffer = b""

    def _recv(self, deadline: float, received: int) -> bytes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the reply was still arriving at the deadline ({received} bytes so far)")
        assert self.sock is not None
        cooperative.wait_readable(self.sock, deadline)  # inside a hub's task: the other tasks run meanwhile
        return self.sock.recv(CHUNK)

    def exchange(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], deadline: float
    ) -> tuple[int, str, bytes, bool]:
        if self.sock is None:
            self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buffer = b""
        body = body or b""
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.netloc}",
            f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in headers.items()),
            "",
            "",
        ]
        self.sock.sendall("\r\n".join(lines).encode("latin-1") + body)
        buffer = self.buffer
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            chunk = self._recv(deadline, len(buffer))
            if not chunk:
                if buffer:
                    raise http.client.IncompleteRead(buffer)
                raise http.client.RemoteDisconnected("Remote end closed connection without response")
            buffer += chunk
        head, buffer = buffer[:end].decode("latin-1").split("\r\n"), buffer[end + 4 :]
        version, _, rest = head[0].partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/") or not code.isdigit():
            raise http.client.BadStatusLine(head[0])
        fields = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        keep = version == "HTTP/1.1" and fields.get("connection", "").lower() != "close"
        if "chunked" in fields.get("transfer-encoding", "").lower():
            data, buffer = self._read_chunked(buffer, deadline)
        elif "content-length" in fields:
            length = int(fields["content-length"])
            while len(buffer) < length:
                chunk = self._recv(deadline, len(buffer))
                if not chunk:
                    raise http.client.IncompleteRead(buffer, length - len(buffer))
                buffer += chunk
            data, buffer = buffer[:length], buffer[length:]
        else:  # the body ends with the connection
            parts = [buffer]
            while chunk := self._recv(deadline, sum(map(len, parts))):
                parts.append(chunk)
            data, buffer, keep = b"".join(parts), b"", False
        self.buffer = buffer
        if not keep:
            self.close()
        return int(code), reason, data, keep

    def _read_chunked(self, buffer: bytes, deadline: float) -> tuple[bytes, bytes]:
        parts: list[bytes] = []
        while True:
            while (eol := buffer.find(b"\r\n")) < 0:
                buffer = self._more(buffer, deadline, parts)
            size = int(buffer[:eol].split(b";")[0].strip() or b"0", 16)
            buffer = buffer[eol + 2 :]
            if size == 0:  # trailers, then an empty line
                while (end := buffer.find(b"\r\n")) != 0:
                    if end > 0:
                        buffer = buffer[end + 2 :]
                    else:
                        buffer = self._more(buffer, deadline, parts)
                return b"".join(parts), buffer[2:]
            while len(buffer) < size + 2:
                buffer = self._more(buffer, deadline, parts)
            parts.append(buffer[:size])
            buffer = buffer[size + 2 :]

    def _more(self, buffer: bytes, deadline: float, parts: list[bytes]) -> bytes:
        chunk = self._recv(deadline, sum(map(len, parts)) + len(buffer))
        if not chunk:
            raise http.client.IncompleteRead(b"".join(parts) + buffer)
        return buffer + chunk

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buffer = b""


class KeepAlivePool:
    """Keep-alive HTTP connections to one server, at most ``max_in_flight`` requests at once (thread-safe; inside
    a :class:`~steer_envs.cooperative.Hub`'s tasks every wait yields to the other tasks).

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
        self._cls = _LibraryConnection if parsed.scheme == "https" else _PlainConnection
        self._netloc = parsed.netloc
        self.prefix = parsed.path.rstrip("/")
        self.timeout = timeout
        self.max_in_flight = max_in_flight
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._lock = threading.Lock()
        self._idle: list[_PlainConnection | _LibraryConnection] = []
        self.opened = 0  # connections opened so far (tests, diagnostics)
        self.in_flight = 0
        self.peak_in_flight = 0

    def _open(self) -> _PlainConnection | _LibraryConnection:
        with self._lock:
            self.opened += 1
        return self._cls(self._netloc, self.timeout)

    def _checkout(self) -> tuple[_PlainConnection | _LibraryConnection, bool]:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            if self._idle:
                return self._idle.pop(), True
        return self._open(), False

    def _checkin(self, conn: _PlainConnection | _LibraryConnection | None) -> None:
        with self._lock:
            self.in_flight -= 1
            if conn is not None:
                self._idle.append(conn)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        root: bool = False,
    ) -> tuple[int, str, bytes]:
        """``(status, reason, body)`` of ``method path`` (``path`` below the base URL's path, or below the server's
        root with ``root=True``: vLLM serves ``/tokenize`` beside ``/v1``); the whole exchange is bounded by
        ``timeout`` seconds from the moment a slot was free. Raises what ``http.client`` raises (``OSError`` and
        ``TimeoutError`` included)."""
        full = path if root else f"{self.prefix}{path}"
        headers = headers or {}
        with cooperative.holding(self._slots):
            deadline = time.monotonic() + self.timeout
            conn, reused = self._checkout()
            keep: _PlainConnection | _LibraryConnection | None = None
            try:
                try:
                    status, reason, data, alive = conn.exchange(method, full, body, headers, deadline)
                except STALE_CONNECTION:
                    if not reused:
                        raise
                    conn.close()
                    conn = self._open()
                    status, reason, data, alive = conn.exchange(method, full, body, headers, deadline)
                if alive:
                    keep = conn
                return status, reason, data
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
