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
    _server_env,
    detached_record,
    port_holders,
    server_command,
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


# A server's leader that exits at once on SIGTERM, and a forked child (vLLM's engine core has the server's command
# line) that takes a second to finish after it: the shape that left a process behind when stop waited for the leader.
_LINGERING_CHILD = """
import os, signal, sys, time
if os.fork() == 0:
    signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1.0), os._exit(0)))
    while True:
        time.sleep(0.05)
print("ready", flush=True)
time.sleep(60)
"""


def _group_members(pgid: int) -> list[int]:
    members = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                state_and_pgrp = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(state_and_pgrp[2]) == pgid and state_and_pgrp[0] != "Z":
                members.append(int(pid))
    return members


@pytest.mark.parametrize("stop_with", ["stop_detached", "server.stop"])
def test_stop_returns_only_when_every_process_of_the_server_is_gone(tmp_path, monkeypatch, stop_with):
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path))
    live = subprocess.Popen(
        [sys.executable, "-c", _LINGERING_CHILD], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    try:
        assert live.stdout.readline().strip() == "ready"
        assert len(_group_members(live.pid)) == 2
        if stop_with == "stop_detached":
            _record(8198, live.pid)
            assert stop_detached(8198, timeout=10).startswith("stopped")
        else:
            (tmp_path / "config.json").write_text("{}")
            server = VLLMServer(VLLMServeOptions(model=str(tmp_path), port=8198, device="cpu"))
            server.process = live
            server.stop(timeout=10)
        assert _group_members(live.pid) == []  # the lingering child too, not only the leader
    finally:
        for pid in _group_members(live.pid):
            os.kill(pid, 9)
        live.kill()
        live.wait()


def test_a_cpu_server_starts_without_a_worker_process_unless_the_user_chose_a_backend(monkeypatch, tmp_path):
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    (tmp_path / "config.json").write_text("{}")
    cpu = VLLMServeOptions(model=str(tmp_path), device="cpu")
    command = server_command(cpu, "python", 8000, on_cpu=True)
    assert command[command.index("--distributed-executor-backend") + 1] == "uni"
    assert _server_env(cpu, on_cpu=True)["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    chosen = VLLMServeOptions(model=str(tmp_path), device="cpu", extra_args=("--distributed-executor-backend", "mp"))
    assert server_command(chosen, "python", 8000, on_cpu=True).count("--distributed-executor-backend") == 1
    gpu = VLLMServeOptions(model=str(tmp_path), device="cuda")
    assert "--distributed-executor-backend" not in server_command(gpu, "python", 8000, on_cpu=False)
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in _server_env(gpu, on_cpu=False)
