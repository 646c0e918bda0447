"""The retrieval server under hostile input and slow clients: every bad request is a 4xx with a JSON ``detail``,
slow clients are dropped, one request's work is bounded, and web pages of other origins are refused. A one-hit
retriever stands in for the index (these are properties of the HTTP layer)."""

from __future__ import annotations

import socket

import pytest
import requests

from steer_envs.retrieval.base import Hit
from steer_envs.retrieval.server import ServerConfig, start_server
from tests.timing import wall_seconds_under

DEEP = b"[" * 5000 + b"]" * 5000
HUGE_INT = b"9" * 5000


class OneHitRetriever:
    name = "one-hit"

    def batch_search(self, queries, k):
        return [[Hit(id=str(i), title="Title", text="text " * 50, score=1.0) for i in range(k)] for _ in queries]


@pytest.fixture(scope="module")
def server():
    # a body timeout long enough for the 2 MB maximal request on a loaded machine, short enough to wait for
    srv, thread = start_server(OneHitRetriever(), None, ServerConfig(port=0, header_timeout_s=0.5, body_timeout_s=2.0))
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def _post(server, path, body, **headers):
    return requests.post(
        server.url + path, data=body, headers={"Content-Type": "application/json", **headers}, timeout=10
    )


@pytest.mark.parametrize("path", ["/retrieve", "/access"])
@pytest.mark.parametrize(
    "body,message",
    [
        (DEEP, "nested too deeply"),
        (b'{"queries": ["q"], "topk": ' + HUGE_INT + b"}", "5000 digits"),
        (b'{"urls": [' + HUGE_INT + b"]}", "5000 digits"),
        (b'{"queries": ["\\ud800"], "urls": ["https://en.wikipedia.org/wiki/\\udc00"]}', "lone UTF-16 surrogate"),
        (b"\xff\xfe", "not valid UTF-8"),
        (b'{"queries": [NaN]}', "NaN is not JSON"),
    ],
    ids=["deep-array", "huge-topk", "huge-int", "lone-surrogate", "not-utf8", "nan"],
)
def test_hostile_json_is_a_422_with_a_json_detail(server, path, body, message):
    reply = _post(server, path, body)
    assert reply.status_code == 422 and message in reply.json()["detail"]


def test_access_does_not_echo_a_lone_surrogate(server):
    reply = _post(server, "/access", b'{"urls": ["https://en.wikipedia.org/wiki/A\\udc00"]}')
    assert reply.status_code == 422 and "surrogate" in reply.json()["detail"]


def test_a_maximal_request_is_refused_before_any_work(server):
    with wall_seconds_under(5, typical_s=0.1):  # refused before any search: 512 searches would take seconds
        reply = requests.post(server.url + "/retrieve", json={"queries": ["q" * 4000] * 512, "topk": 100}, timeout=30)
        assert reply.status_code == 413 and "split the batch" in reply.json()["detail"]
        reply = requests.post(server.url + "/retrieve", json={"queries": ["q"] * 512, "topk": 100}, timeout=30)
        assert reply.status_code == 413 and "512 queries x topk 100 = 51200 hits" in reply.json()["detail"]
    assert requests.post(server.url + "/retrieve", json={"queries": ["q"] * 40, "topk": 100}).status_code == 200


def test_an_answer_past_its_size_bound_is_refused():
    srv, thread = start_server(OneHitRetriever(), None, ServerConfig(port=0, max_answer_bytes=20_000))
    try:
        reply = requests.post(srv.url + "/retrieve", json={"queries": ["q"] * 10, "topk": 20}, timeout=10)
        assert reply.status_code == 413 and "the answer would be" in reply.json()["detail"]
        assert requests.post(srv.url + "/retrieve", json={"queries": ["q"], "topk": 2}).status_code == 200
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)


def test_a_web_page_of_another_origin_is_refused(server):
    for body in (b'{"queries": ["q"]}', b'{"urls": ["x"]}'):
        path = "/retrieve" if b"queries" in body else "/access"
        reply = _post(server, path, body, Origin="http://evil.example")
        assert reply.status_code == 403 and "--allow-origin" in reply.json()["detail"]
        assert _post(server, path, body, Origin="http://localhost:3000").status_code == 200


def _raw(server, data: bytes, wait: float = 10.0) -> bytes:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def test_half_sent_headers_and_bodies_time_out_with_a_json_408(server):
    with wall_seconds_under(25, typical_s=2.5):  # the server's two read timeouts
        reply = _raw(server, b"POST /retrieve HTTP/1.1\r\nHost: x\r\n")
        assert reply.startswith(b"HTTP/1.1 408") and b'"detail"' in reply and b"headers" in reply
        reply = _raw(server, b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        assert reply.startswith(b"HTTP/1.1 408") and b"body" in reply


def test_malformed_framing_is_a_json_400(server):
    reply = _raw(server, b"POST /retrieve HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    assert reply.startswith(b"HTTP/1.1 400") and b'"detail": "invalid HTTP request' in reply


def test_a_chunked_body_is_bounded_whatever_its_framing():
    srv, thread = start_server(OneHitRetriever(), None, ServerConfig(port=0, max_body_bytes=1000))
    try:

        def chunks():
            for _ in range(64):
                yield b'{"queries": [' + b'"q",' * 100

        reply = requests.post(srv.url + "/retrieve", data=chunks(), timeout=10)
        assert reply.status_code == 413 and "exceeds the limit" in reply.json()["detail"]
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
