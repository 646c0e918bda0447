"""Reading an HTTP reply body under a deadline, noticing truncation.

Why: a socket timeout bounds each read, not the whole reply, so a server that trickles a byte at a time (an
overloaded proxy, a dying GPU server) would hold a client forever; and ``http.client`` returns a short body
without complaint when the connection closes before ``Content-Length`` bytes arrived. Both clients (the
``openai:`` model backend and the ``http:`` retriever) read replies through :func:`read_body`, so a slow or
truncated reply becomes an ordinary, retried failure.
"""
from __future__ import annotations

import http.client
import time

CHUNK = 1 << 16


def read_body(response: http.client.HTTPResponse, deadline: float) -> bytes:
    """The whole body of ``response``; ``TimeoutError`` past ``deadline`` (a ``time.monotonic()`` value),
    ``http.client.IncompleteRead`` when the connection closes before the announced length arrived."""
    parts: list[bytes] = []
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the reply was still arriving at the deadline ({sum(map(len, parts))} bytes so far)")
        chunk = response.read1(CHUNK)
        if not chunk:
            break
        parts.append(chunk)
    body = b"".join(parts)
    missing = response.length  # what Content-Length announced and never came (None: no length announced)
    if missing:
        raise http.client.IncompleteRead(body, missing)
    return body
