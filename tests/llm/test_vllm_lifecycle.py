"""The engine's lifecycle says only what happened: ``serve`` on a port another process holds fails before anything
is installed or launched, naming the holder; ``stop`` says whether it stopped the server, found it already gone, or
left another process on the port. These paths need no vLLM: the holders are plain sockets and processes here."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from steer_envs.llm.vllm_engine import (
    VLLMEngineError,
    VLLMServeOptions,
    VLLMServer,
    detached_record,
    port_holders,
    stop_detached,
)


@pytest.fixture()
def listener():
    """A socket of this process listening on a free loopback port: another server holding it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_serve_on_an_occupied_port_fails_naming_its_holder(listener, tmp_path):
    assert os.getpid() in port_holders(listener)
    (tmp_path / "config.json").write_text("{}")  # a model folder's shape: the port is refused before it is read
    server = VLLMServer(VLLMServeOptions(model=str(tmp_path), port=listener, device="cpu"))
    with pytest.raises(VLLMEngineError, match=f"port {listener} .*already in use by pid {os.getpid()}"):
        server.start()
    assert server.process is None  # nothing was launched


def _record(port: int, pid: int) -> None:
    url = f"http://127.0.0.1:{port}/v1"
    detached_record(port).write_text(json.dumps({"pid": pid, "url": url, "log": "-", "model": "m"}))


def test_stop_says_a_server_that_already_died_was_not_running(tmp_path, monkeypatch):
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    gone.wait()
    _record(8199, gone.pid)
    said = stop_detached(8199)
    assert "was not running" in said and "stopped" not in said.split("(")[0]
    assert not detached_record(8199).exists()


def test_stop_stops_a_live_server_and_names_another_holder_of_the_port(tmp_path, monkeypatch, listener):
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path))
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        _record(listener, live.pid)
        said = stop_detached(listener, timeout=10)
        assert said.startswith(f"stopped m at http://127.0.0.1:{listener}/v1 (pid {live.pid})")
        assert live.poll() is not None  # really gone
        assert f"still held by another process: pid {os.getpid()}" in said  # the listener is not the server
    finally:
        live.kill()
        live.wait()
