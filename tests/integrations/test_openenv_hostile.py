"""``serve-env`` under hostile input and slow clients (in process, on loopback): every bad input is a 4xx with a
JSON ``detail`` before anything changes state, a session has one lifecycle on every transport, the limits hold
whatever the framing, and web pages of other origins are refused."""
from __future__ import annotations

import json
import socket
import time

import pytest

pytest.importorskip("openenv")
requests = pytest.importorskip("requests")
ws_client = pytest.importorskip("websockets.sync.client")

from steer_envs.integrations.openenv import EnvServer, EnvServerConfig  # noqa: E402

ENV = "steer_envs/GuidedSearch-v0"
DEEP = b"[" * 5000 + b"]" * 5000
SURROGATE_ACTION = b'{"action": "<search> \\ud800 </search>"}'


def _server(**limits):
    config = EnvServerConfig(ENV, {"action_mode": "text"}, port=0, **limits)
    return EnvServer(config).start()


@pytest.fixture(scope="module")
def server():
    # a body timeout long enough for a megabyte on a loaded machine (the chunked-body test), short enough to wait for
    srv = _server(max_sessions=3, header_timeout_s=0.5, body_timeout_s=3.0)
    yield srv
    srv.shutdown()
    srv.server_close()


class Session:
    """An HTTP session, deleted on exit (the module's server holds only 3)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> "Session":
        reply = requests.post(self.url + "/sessions", timeout=30)
        assert reply.status_code == 201, reply.text
        self.id = reply.json()["session_id"]
        self.base = f"{self.url}/sessions/{self.id}"
        return self

    def post(self, route: str, body: bytes | dict):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return requests.post(f"{self.base}/{route}", data=data, headers={"Content-Type": "application/json"},
                             timeout=60)

    def state(self) -> dict:
        reply = requests.get(f"{self.base}/state", timeout=30)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def __exit__(self, *exc: object) -> None:
        requests.delete(self.base, timeout=30)


def _raw(url: str, data: bytes, wait: float = 10.0) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def _ws(url: str, **kwargs):
    return ws_client.connect(url.replace("http://", "ws://") + "/ws", **kwargs)


@pytest.mark.parametrize("body,message", [
    (DEEP, "nested too deeply"),
    (b'{"seed": ' + b"9" * 5000 + b"}", "5000 digits"),
    (SURROGATE_ACTION, "lone UTF-16 surrogate"),
], ids=["deep-array", "huge-int", "lone-surrogate"])
def test_hostile_bodies_are_a_422_on_every_route(server, body, message):
    with Session(server.url) as session:
        assert session.post("reset", {"seed": 1}).status_code == 200
        for route in ("reset", "step"):
            reply = session.post(route, body)
            assert reply.status_code == 422 and message in reply.json()["detail"], (route, reply.text)
        for path in ("/reset", "/step", "/mcp"):
            reply = requests.post(server.url + path, data=body, headers={"Content-Type": "application/json"})
            assert reply.status_code == 422 and message in reply.json()["detail"], (path, reply.text)
        assert session.state()["step_count"] == 0


def test_a_surrogate_action_leaves_the_episode_as_it_was(server):
    with Session(server.url) as session:
        assert session.post("reset", {"seed": 2}).status_code == 200
        reply = session.post("step", SURROGATE_ACTION)
        assert reply.status_code == 422 and "surrogate" in reply.json()["detail"]
        assert session.state()["step_count"] == 0
        reply = session.post("step", {"action": "<search> danube delta </search>"})
        assert reply.status_code == 200 and session.state()["step_count"] == 1


def test_true_is_not_a_seed_and_a_surrogate_episode_id_is_refused(server):
    with Session(server.url) as session:
        reply = session.post("reset", {"seed": True})
        assert reply.status_code == 422 and "seed" in reply.json()["detail"]
        reply = requests.post(server.url + "/reset", json={"seed": True})
        assert reply.status_code == 422 and "seed must be a non-negative integer" in reply.json()["detail"]
        reply = session.post("reset", b'{"seed": 1, "episode_id": "\\udc00"}')
        assert reply.status_code == 422 and "episode_id" in reply.json()["detail"]
        assert session.state()["episode_id"] is None  # the state stays readable


def test_a_step_whose_body_arrives_after_the_delete_is_refused(server):
    with Session(server.url) as session:
        assert session.post("reset", {"seed": 3}).status_code == 200
        body = b'{"action": "pass"}'
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(f"POST /sessions/{session.id}/step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:3])
            time.sleep(0.1)
            assert requests.delete(session.base, timeout=10).status_code == 204
            sock.sendall(body[3:])
            reply = sock.recv(65536)
        assert reply.startswith(b"HTTP/1.1 404") and b"unknown session id" in reply


def test_chunked_bodies_are_bounded_on_openenv_routes(server):
    def chunks():
        for _ in range(4 * 1024):
            yield b"x" * 1024

    for path in ("/step", "/reset", "/mcp", "/sessions"):
        reply = requests.post(server.url + path, data=chunks(), timeout=30)
        assert reply.status_code == 413 and "exceeds the limit" in reply.json()["detail"], path


def test_half_sent_requests_time_out_and_bad_framing_is_a_json_400(server):
    reply = _raw(server.url, b"POST /sessions HTTP/1.1\r\nHost: x\r\n")
    assert reply.startswith(b"HTTP/1.1 408") and b'"detail"' in reply
    reply = _raw(server.url, b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{")
    assert reply.startswith(b"HTTP/1.1 408") and b"body" in reply
    reply = _raw(server.url, b"POST /reset HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    assert reply.startswith(b"HTTP/1.1 400") and b'"detail"' in reply


def test_hostile_websocket_frames_get_an_error_and_the_session_stays_usable(server):
    with _ws(server.url) as ws:
        for frame, message in (("null", "JSON object with a string 'type'"), ("[]", "JSON object"),
                               ("1", "JSON object"), (b"\x00", "binary frames"), (DEEP.decode(), "nested too deeply"),
                               ('{"type": "reset", "data": {"seed": true}}', "seed"),
                               ('{"type": "step", "data": ' + SURROGATE_ACTION.decode() + "}", "surrogate")):
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=30))
            assert reply["type"] == "error" and message in reply["data"]["message"], (frame[:20], reply)
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"action": "pass"}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"


def test_web_pages_of_other_origins_are_refused(server):
    evil = {"Origin": "http://evil.example"}
    with pytest.raises(Exception, match="403"):
        _ws(server.url, additional_headers=evil)
    reply = requests.post(server.url + "/sessions", data=b"{}", headers={**evil, "Content-Type": "text/plain"})
    assert reply.status_code == 403 and "--allow-origin" in reply.json()["detail"]
    with _ws(server.url, additional_headers={"Origin": "http://localhost:8080"}) as ws:
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "state"


def test_max_sessions_bounds_stateless_requests_too(server):
    with Session(server.url), Session(server.url), Session(server.url):
        reply = requests.post(server.url + "/reset", json={"seed": 1}, timeout=30)
        assert reply.status_code == 429 and "--max-sessions" in reply.json()["detail"]
    assert requests.post(server.url + "/reset", json={"seed": 1}, timeout=60).status_code == 200


def test_a_reaped_websocket_is_closed_and_live_envs_stay_bounded():
    srv = _server(max_sessions=3, idle_timeout_s=1.0)
    try:
        with _ws(srv.url) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(ws.recv(timeout=60))["type"] == "observation"
            reply = json.loads(ws.recv(timeout=30))  # the reaper runs every 5 s
            assert reply["type"] == "error" and "idle longer than 1 s" in reply["data"]["message"]
            with pytest.raises(Exception, match="1001"):
                ws.send(json.dumps({"type": "step", "data": {"action": "pass"}}))
                ws.recv(timeout=10)
        sessions = [requests.post(srv.url + "/sessions", timeout=30) for _ in range(4)]
        assert [s.status_code for s in sessions] == [201, 201, 201, 429]
        assert srv.openenv._env_factory.args[-1].live == 3
    finally:
        srv.shutdown()
        srv.server_close()
