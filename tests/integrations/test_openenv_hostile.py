"""``serve-env`` under hostile input and slow clients (in process, on loopback): every bad input is a 4xx with a
JSON ``detail`` before anything changes state, a session has one lifecycle on every transport, the limits hold
whatever the framing, and web pages of other origins are refused."""

from __future__ import annotations

import itertools
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

    def __enter__(self) -> Session:
        reply = requests.post(self.url + "/sessions", timeout=30)
        assert reply.status_code == 201, reply.text
        self.id = reply.json()["session_id"]
        self.base = f"{self.url}/sessions/{self.id}"
        return self

    def post(self, route: str, body: bytes | dict):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return requests.post(
            f"{self.base}/{route}", data=data, headers={"Content-Type": "application/json"}, timeout=60
        )

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


@pytest.mark.parametrize(
    "body,message",
    [
        (DEEP, "nested too deeply"),
        (b'{"seed": ' + b"9" * 5000 + b"}", "5000 digits"),
        (SURROGATE_ACTION, "lone UTF-16 surrogate"),
    ],
    ids=["deep-array", "huge-int", "lone-surrogate"],
)
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
            sock.sendall(
                f"POST /sessions/{session.id}/step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body[:3]
            )
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
        for frame, message in (
            ("null", "JSON object with a string 'type'"),
            ("[]", "JSON object"),
            ("1", "JSON object"),
            (b"\x00", "binary frames"),
            (DEEP.decode(), "nested too deeply"),
            ('{"type": "reset", "data": {"seed": true}}', "seed"),
            ('{"type": "step", "data": ' + SURROGATE_ACTION.decode() + "}", "surrogate"),
        ):
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


def _status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0


def test_a_step_that_arrived_before_its_delete_completes_or_is_refused_never_a_5xx(server, monkeypatch):
    """A step whose request had fully arrived when the DELETE came either ran first (200) or finds the session gone
    (404/409); no env is ever stepped after its close began, and the id answers 404 afterwards."""
    from steer_envs.integrations import openenv

    events: list[tuple[str, int]] = []
    step, close = openenv.GymnasiumEnvironment.step, openenv.GymnasiumEnvironment.close
    names = itertools.count()

    def name(env) -> int:  # not id(): a closed env's id is reused by the next one
        return env.__dict__.setdefault("_test_name", next(names))

    def recording_step(self, action, *args, **kwargs):
        events.append(("stepping", name(self)))
        observation = step(self, action, *args, **kwargs)
        events.append(("stepped", name(self)))
        return observation

    def recording_close(self):
        events.append(("closing", name(self)))
        close(self)

    monkeypatch.setattr(openenv.GymnasiumEnvironment, "step", recording_step)
    monkeypatch.setattr(openenv.GymnasiumEnvironment, "close", recording_close)
    host, port = server.url.removeprefix("http://").split(":")
    outcomes = []
    for attempt in range(12):
        session = Session(server.url).__enter__()
        assert session.post("reset", {"seed": attempt}).status_code == 200
        body = b'{"action": "<search> danube delta </search>"}'
        with (
            socket.create_connection((host, int(port)), timeout=30) as stepper,
            socket.create_connection((host, int(port)), timeout=30) as deleter,
        ):
            stepper.sendall(
                f"POST /sessions/{session.id}/step HTTP/1.1\r\nHost: x\r\nContent-Type: "
                f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            time.sleep(0.002 * (attempt % 4))  # the DELETE lands before, during or after the step's handling
            deleter.sendall(f"DELETE /sessions/{session.id} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            stepped, deleted = _status(stepper.recv(65536)), _status(deleter.recv(65536))
        outcomes.append(stepped)
        assert stepped in (200, 404, 409) and deleted == 204, (attempt, stepped, deleted)
        assert session.post("step", {"action": "pass"}).status_code == 404
        assert requests.get(f"{session.base}/state", timeout=30).status_code == 404
    closed: set[int] = set()
    for kind, env in events:
        if kind == "closing":
            closed.add(env)
        elif kind == "stepped":  # a step refused at its start (a closed env: 404) never reaches "stepped"
            assert env not in closed, "an env was stepped after (or while) its close began"
    assert 200 in outcomes, outcomes  # the race was run: some steps began first


def test_full_slots_refuse_what_would_build_an_env_and_serve_the_rest(server):
    """With every ``--max-sessions`` slot taken: each route that would build an env answers 429 with a JSON
    ``detail`` (HTTP sessions, the stateless routes, MCP, a WebSocket handshake on /ws and /mcp), while the routes
    that read without an env (/metadata, /state, /health, /schema) and the open sessions keep answering."""
    with Session(server.url) as first, Session(server.url), Session(server.url):
        for path, body in (
            ("/sessions", {}),
            ("/reset", {"seed": 1}),
            ("/step", {"action": "pass"}),
            ("/mcp", {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}),
            ("/mcp", {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 2}),
        ):
            reply = requests.post(server.url + path, json=body, timeout=30)
            assert reply.status_code == 429 and "--max-sessions" in reply.json()["detail"], (path, reply.text)
        for path in ("/ws", "/mcp"):
            with pytest.raises(Exception) as refused:
                _ws(server.url).close() if path == "/ws" else ws_client.connect(
                    server.url.replace("http://", "ws://") + path
                ).close()
            response = getattr(refused.value, "response", None)
            assert response is not None and response.status_code == 429, (path, refused.value)
            assert "--max-sessions" in json.loads(bytes(response.body))["detail"]
        metadata = requests.get(server.url + "/metadata", timeout=30)
        assert metadata.status_code == 200 and metadata.json()["name"] == ENV
        state = requests.get(server.url + "/state", timeout=30)
        assert state.status_code == 200 and state.json()["env_id"] == ENV and state.json()["step_count"] == 0
        for path in ("/health", "/schema"):
            assert requests.get(server.url + path, timeout=30).status_code == 200, path
        assert first.post("reset", {"seed": 4}).status_code == 200 and first.state()["episode_id"] is None
    with _ws(server.url) as ws:  # a slot is free again
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"


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
