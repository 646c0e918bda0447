"""``steer-envs serve-env`` in a real process on loopback, driven by its OpenEnv client and by plain HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401 - registers the ids

pytest.importorskip("openenv")
psutil = pytest.importorskip("psutil")
pytestmark = pytest.mark.slow  # each server process takes 20-70 s to start on 2 busy cores (OpenEnv's imports)

from steer_envs.integrations.openenv import SteerEnvClient  # noqa: E402
from tests.timing import wait_until  # noqa: E402

KEY = "test-key-123"
NOTE = "Verify the evidence: re-read the retrieved documents."


def _serve(*args):
    # stderr goes to a file: an unread pipe fills up with the server's log and blocks it
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "steer_envs.cli.main", "serve-env", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=os.environ.copy(),
    )
    proc.log = log
    line = proc.stdout.readline()  # printed once the server listens
    match = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
    if not match:
        proc.kill()
        log.seek(0)
        raise AssertionError((line, log.read()))
    return proc, match.group(1)


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    proc.log.close()


@pytest.fixture(scope="module")
def steering_server():
    proc, url = _serve(
        "steer_envs/SearchSteering-v0",
        "--env-kwargs",
        '{"action_mode": "text"}',
        "--max-sessions",
        "24",
        "--max-action-chars",
        "500",
        "--api-key",
        KEY,
    )
    yield proc, url
    _stop(proc)


def _http(url, method="GET", body=None, key=KEY, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["X-API-Key"] = key
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _announce_oversized_body(url, length):
    """POST whose headers announce ``length`` body bytes, without sending them: the server answers 413 from the
    header, and a client still writing a body it refused would hit a broken pipe, depending on timing."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest("POST", parts.path)
        for name, value in (("Content-Type", "application/json"), ("X-API-Key", KEY), ("Content-Length", str(length))):
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def _policy(obs):
    return NOTE if int(obs["turn"]) == 1 else "pass"


def _local_episode(seed):
    env = gym.make("steer_envs/SearchSteering-v0", action_mode="text")
    obs, info = env.reset(seed=seed)
    steps = []
    done = False
    while not done:
        action = _policy(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        steps.append((action, float(reward), obs["transcript"], info["executor_turns"]))
    return steps, info["answer"], info["f1"]


async def _remote_episode(url, seed):
    async with SteerEnvClient(url, api_key=KEY) as client:
        result = await client.reset(seed=seed)
        steps = []
        while not result.done:
            obs = result.observation.observation
            action = _policy(obs)
            result = await client.step(action)
            o = result.observation
            steps.append((action, float(result.reward), o.observation["transcript"], o.info["executor_turns"]))
        state = await client.state()
        return steps, o.info["answer"], o.info["f1"], state


def test_sixteen_concurrent_sessions_equal_the_in_process_env(steering_server):
    _, url = steering_server

    async def run_all():
        return await asyncio.gather(*[_remote_episode(url, seed) for seed in range(16)])

    remote = asyncio.run(run_all())
    for seed, (steps, answer, f1, state) in enumerate(remote):
        assert (steps, answer, f1) == _local_episode(seed), seed
        assert state.step_count == len(steps) and state.done
        assert abs(state.episode_return - sum(s[1] for s in steps)) < 1e-9


def test_http_sessions_and_clear_4xx(steering_server):
    _, url = steering_server
    status, body = _http(url + "/sessions", "POST", {})
    assert status == 201
    sid = body["session_id"]
    status, first = _http(f"{url}/sessions/{sid}/reset", "POST", {"seed": 3})
    assert status == 200 and first["done"] is False
    status, body = _http(f"{url}/sessions/{sid}/step", "POST", raw=b"{not json")
    assert status == 422 and "not valid JSON" in body["detail"]
    status, body = _http(f"{url}/sessions/{sid}/step", "POST", {"act": "pass"})
    assert status == 422 and "action" in body["detail"] and "malformed body" in body["detail"]
    status, body = _http(f"{url}/sessions/{sid}/step", "POST", {"action": "x" * 501})
    assert status == 413 and "at most 500" in body["detail"]
    status, body = _http(f"{url}/sessions/no-such-id/step", "POST", {"action": "pass"})
    assert status == 404 and "unknown session id 'no-such-id'" in body["detail"]
    status, body = _http(f"{url}/sessions/{sid}/step", "POST", {"action": "pass"}, key=None)
    assert status == 401 and "API key" in body["detail"]
    status, body = _http(f"{url}/sessions/{sid}/step", "POST", {"action": "pass"}, key="wrong")
    assert status == 401
    status, body = _announce_oversized_body(url + "/sessions", 2 << 20)
    assert status == 413 and "exceeds the limit" in body["detail"]
    status, body = _http(url + "/health", key=None)  # open without the key
    assert status == 200
    # the rejected requests left the session intact: it continues like the in-process episode of seed 3
    local, answer, f1 = _local_episode(3)
    transcripts = []
    obs = first["observation"]["observation"]
    done = False
    while not done:
        status, step = _http(f"{url}/sessions/{sid}/step", "POST", {"action": _policy(obs)})
        assert status == 200
        obs, done = step["observation"]["observation"], step["done"]
        transcripts.append(obs["transcript"])
    assert transcripts == [s[2] for s in local] and step["observation"]["info"]["f1"] == f1
    status, body = _http(f"{url}/sessions/{sid}/step", "POST", {"action": "pass"})
    assert status == 409 and "ended" in body["detail"]
    assert _http(f"{url}/sessions/{sid}", "DELETE")[0] == 204
    assert _http(f"{url}/sessions/{sid}/state")[0] == 404


def test_websocket_without_the_key_is_refused(steering_server):
    _, url = steering_server

    async def connect():
        async with SteerEnvClient(url) as client:
            await client.reset(seed=0)

    with pytest.raises(ConnectionError, match="403"):
        asyncio.run(connect())


def test_bounded_soak_keeps_memory_flat_and_a_live_session_keeps_its_state(steering_server):
    proc, url = steering_server
    server = psutil.Process(proc.pid)
    status, body = _http(url + "/sessions", "POST", {})
    keeper = body["session_id"]  # opened first, stepped once, then left idle while thousands of steps run
    _, first = _http(f"{url}/sessions/{keeper}/reset", "POST", {"seed": 5})
    _, kept_step = _http(f"{url}/sessions/{keeper}/step", "POST", {"action": "pass"})

    def churn(episodes):
        steps = 0
        for e in range(episodes):
            _, s = _http(url + "/sessions", "POST", {})
            sid = s["session_id"]
            _http(f"{url}/sessions/{sid}/reset", "POST", {"seed": e % 7})
            done = False
            while not done:
                status, step = _http(f"{url}/sessions/{sid}/step", "POST", {"action": "pass"})
                assert status == 200
                done = step["done"]
                steps += 1
            assert _http(f"{url}/sessions/{sid}", "DELETE")[0] == 204
        return steps

    churn(150)  # warm-up: caches, allocator pools
    rss_before = server.memory_info().rss
    steps = churn(1200)
    rss_after = server.memory_info().rss
    assert steps >= 2000
    assert rss_after - rss_before < 40 * 2**20, (rss_before, rss_after, steps)
    # the idle session still holds its episode: finishing it gives the in-process episode of seed 5
    local, answer, f1 = _local_episode(5)
    status, state = _http(f"{url}/sessions/{keeper}/state")
    assert status == 200 and state["step_count"] == 1
    step, done = kept_step, kept_step["done"]
    while not done:
        status, step = _http(f"{url}/sessions/{keeper}/step", "POST", {"action": "pass"})
        done = step["done"]
    local_pass = gym.make("steer_envs/SearchSteering-v0", action_mode="text")
    local_pass.reset(seed=5)
    d = False
    while not d:
        *_, term, trunc, info = local_pass.step("pass")
        d = term or trunc
    assert step["observation"]["info"]["f1"] == info["f1"] and step["observation"]["info"]["answer"] == info["answer"]


def test_idle_sessions_expire_and_sessions_are_bounded():
    proc, url = _serve(
        "steer_envs/GuidedSearch-v0",
        "--env-kwargs",
        '{"action_mode": "text"}',
        "--max-sessions",
        "2",
        "--idle-timeout",
        "1",
    )
    try:
        a = _http(url + "/sessions", "POST", {}, key=None)[1]["session_id"]
        _http(url + "/sessions", "POST", {}, key=None)
        status, body = _http(url + "/sessions", "POST", {}, key=None)
        assert status == 429 and "all 2 sessions are in use" in body["detail"]
        closed = lambda: _http(f"{url}/sessions/{a}/state", key=None)[0] != 200  # noqa: E731
        wait_until(closed, 60, 5, "the idle session closed", poll_s=0.5)
        status, body = _http(f"{url}/sessions/{a}/state", key=None)
        assert status == 404 and "idled longer than 1 s" in body["detail"]
    finally:
        _stop(proc)
