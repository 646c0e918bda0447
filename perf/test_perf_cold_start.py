"""Cold starts: the CPU seconds a fresh process spends before it is useful, as a user meets them.

Rows (each a fresh interpreter; CPU = user + system of the process and its children, which other jobs on a shared
machine do not inflate as they inflate the wall time):

* the first step of ``SearchSteering-v0`` with a text note (``gym.make``, ``reset``, ``step(note)``), with the cache
  this suite uses (warm: the BM25 index, the note reader's prototype vectors and probe on disk) and with an empty
  one (everything built: what a new machine's first run pays once);
* ``steer-envs serve-env SearchSteering-v0`` until ``GET /health`` answers (it builds and steps one env first, so
  the first session's note is read without loading the encoder);
* ``steer-envs eval`` of one episode (no_supervision, nq test) from start to exit;
* ``steer-envs build-tiny-model``: into an empty cache (which it fills with the BM25 index and the simulator's
  thought bank as well), into the suite's cache without the model, and copied from a cache that holds it.

Run: ``pytest perf/test_perf_cold_start.py --benchmark-enable -q``.
"""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

#: acceptance bars in CPU seconds: the first note step on a warm cache, serve-env answering /health
TARGET_CPU_S = {"first_step_warm": 5.0, "serve_env": 10.0}
FIRST_STEP = (
    "import gymnasium as gym\n"
    "import steer_envs\n"
    "env = gym.make('steer_envs/SearchSteering-v0', action_mode='text')\n"
    "env.reset(seed=0)\n"
    "env.step('Verify the answer against the retrieved passages before answering.')\n"
)


def _steer_envs() -> list[str]:
    script = shutil.which("steer-envs")
    return [script] if script else [sys.executable, "-m", "steer_envs"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU s, wall s) of ``cmd`` run to its exit."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return _children_cpu() - cpu, time.perf_counter() - start


def _record(benchmark, row: str, cpu_s: float, wall_s: float, cache: str, target: str | None = None) -> None:
    benchmark.extra_info.update(
        {
            "row": row,
            "cpu_s": cpu_s,
            "wall_s": wall_s,
            "cache": cache,
            "target_cpu_s": TARGET_CPU_S.get(target) if target else None,
            "load_1min": os.getloadavg()[0],
        }
    )


@pytest.fixture
def env_with():
    def make(cache: Path | None) -> dict[str, str]:
        env = dict(os.environ)
        if cache is not None:
            env["STEER_ENVS_CACHE"] = str(cache)
        return env

    return make


@pytest.mark.parametrize("cache", ["warm", "empty"])
def test_first_step_with_a_text_note(benchmark, env_with, tmp_path, cache):
    env = env_with(tmp_path / "empty-cache" if cache == "empty" else None)
    cmd = [sys.executable, "-c", FIRST_STEP]
    if cache == "warm":
        _run(cmd, env)  # what the cache keeps is on disk
    cpu_s, wall_s = benchmark.pedantic(_run, args=(cmd, env), rounds=1, iterations=1)
    _record(
        benchmark,
        "first step of SearchSteering-v0 with a text note",
        cpu_s,
        wall_s,
        cache,
        "first_step_warm" if cache == "warm" else None,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve_until_healthy(env: dict[str, str]) -> tuple[float, float]:
    """(CPU s, wall s) of ``serve-env`` from its start until ``/health`` answers (the server is stopped after)."""
    import psutil

    port = _free_port()
    start = time.perf_counter()
    process = psutil.Popen(
        [*_steer_envs(), "serve-env", "SearchSteering-v0", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        while True:
            assert process.poll() is None, process.stderr.read().decode()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
            assert time.perf_counter() - start < 600, "serve-env did not answer /health in 10 minutes"
        wall = time.perf_counter() - start
        times = process.cpu_times()
        return times.user + times.system + times.children_user + times.children_system, wall
    finally:
        process.terminate()
        process.wait(30)


def test_serve_env_until_health_answers(benchmark, env_with):
    env = env_with(None)
    _serve_until_healthy(env)  # the cache's files are on disk
    cpu_s, wall_s = benchmark.pedantic(_serve_until_healthy, args=(env,), rounds=1, iterations=1)
    _record(
        benchmark,
        "`steer-envs serve-env SearchSteering-v0` until `/health` answers",
        cpu_s,
        wall_s,
        "warm",
        "serve_env",
    )


def test_first_eval_episode(benchmark, env_with, tmp_path):
    env = env_with(None)
    args = ["eval", "--method", "no_supervision", "--benchmarks", "nq", "--limit", "1", "--seeds", "1", "--no-progress"]
    _run([*_steer_envs(), *args, "--out", str(tmp_path / "warm-up")], env)
    cmd = [*_steer_envs(), *args, "--out", str(tmp_path / "run")]
    cpu_s, wall_s = benchmark.pedantic(_run, args=(cmd, env), rounds=1, iterations=1)
    _record(benchmark, "`steer-envs eval` of one episode (no_supervision, nq test)", cpu_s, wall_s, "warm")


def _cache_without(tmp_path: Path, left_out: str) -> Path:
    """A cache that holds everything the suite's cache holds but ``left_out`` (each entry linked, not copied)."""
    from steer_envs.paths import cache_dir

    cache = tmp_path / f"cache-without-{left_out}"
    cache.mkdir()
    for entry in cache_dir().iterdir():
        if entry.name != left_out:
            (cache / entry.name).symlink_to(entry)
    return cache


#: build-tiny-model's rows: a new cache, the suite's cache without a built model, a model already built
TINY_MODEL_CACHES = ("empty", "warm, model not built", "model built")


@pytest.mark.parametrize("cache", TINY_MODEL_CACHES)
def test_build_tiny_model(benchmark, env_with, tmp_path, cache):
    if cache == "empty":
        env = env_with(tmp_path / "cache")
    else:
        env = env_with(_cache_without(tmp_path, "tool_models"))
    if cache == "model built":
        _run([*_steer_envs(), "build-tiny-model", str(tmp_path / "first")], env)
    cmd = [*_steer_envs(), "build-tiny-model", str(tmp_path / "model")]
    cpu_s, wall_s = benchmark.pedantic(_run, args=(cmd, env), rounds=1, iterations=1)
    assert (tmp_path / "model" / "config.json").is_file()
    _record(benchmark, "`steer-envs build-tiny-model PATH`", cpu_s, wall_s, cache)
