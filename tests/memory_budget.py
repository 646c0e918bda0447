"""The suite's memory budget, measured on every run: the peak memory (proportional set size, PSS) of the test
process and its children (subprocess CLIs, env workers), sampled every 0.2 s, with the test that was running at
the peak.

Why enforced here: a single test that loads a model twice or keeps a vocabulary-sized logits tensor per token
can take the suite past what a small CI machine has (the causal-LM steerer's training test once took 13 GB). The
budget is ``$STEER_ENVS_TEST_MEMORY_BUDGET_GB`` (default 4); a run above it fails with the test to look at. The
summary states the margin; ``$STEER_ENVS_TEST_MEMORY_REPORT`` names a JSON file that receives every test's peak.

Between two test modules the freed memory goes back to the system (:func:`release_freed_memory`). Why: one
process runs ~1,300 tests, and glibc keeps the heap pages of freed tensors (mostly a few MB each: below its
dynamic mmap threshold once a larger block was freed) for reuse, so without it the process carried ~1.5 GB of
free heap from earlier modules into every later test's peak, an amount that changed with timing from run to run.

An inference engine a test starts (a vLLM server, :data:`steer_envs.llm.vllm_engine.ENGINE_PIDS`) is a model
server, not the suite: its process tree is measured apart and reported beside the suite's peak, outside the budget."""

from __future__ import annotations

import os
import threading

import pytest

BUDGET_ENV = "STEER_ENVS_TEST_MEMORY_BUDGET_GB"
#: the command line of an inference engine's server (steer_envs.llm.vllm_engine.SERVER_MODULE, not imported here)
ENGINE_MODULE = "vllm.entrypoints.openai.api_server"
DEFAULT_BUDGET_GB = 4.0
REPORT_ENV = "STEER_ENVS_TEST_MEMORY_REPORT"


class MemoryBudget:
    def __init__(self, budget_gb: float) -> None:
        import psutil

        self.budget_gb = budget_gb
        self.process = psutil.Process()
        self.peak = 0
        self.peak_test = "(collection)"
        self.current = "(collection)"
        self._own_rss = 0  # this process's RSS when the current test started
        self._pss = True
        self.retained: dict[str, int] = {}  # test -> growth of this process's RSS it left behind
        self.test_peaks: dict[str, int] = {}  # test -> the highest tree memory sampled while it ran
        self.engine_peak = 0  # inference engines the tests started, measured apart (not in the budget)
        self.engine_peak_test = "(none)"
        self._stop = threading.Event()
        threading.Thread(target=self._sample, name="memory-budget", daemon=True).start()

    def _tree_memory(self) -> int:
        """The memory the process tree occupies: the sum of each process's proportional set size (PSS), where a
        page shared by k processes counts 1/k in each. A plain sum of RSS counts every shared library (torch's
        alone is hundreds of MB) once per worker process, memory a laptop never needs; RSS is the fallback where
        PSS is not available."""
        return self._memory_of(self._suite_processes())

    def _memory_of(self, processes) -> int:
        import psutil

        total = 0
        for proc in processes:
            try:
                info = proc.memory_full_info() if self._pss else proc.memory_info()
                total += getattr(info, "pss", info.rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
            except (OSError, AttributeError):  # no PSS here (not Linux, or smaps unreadable): RSS from now on
                self._pss = False
        return total

    def _engine_processes(self) -> list:
        """The process trees of the inference engines this run started: those the engine helper recorded in this
        process, and any descendant running the engine's server module (a server that a command line started)."""
        import sys

        import psutil

        engine = sys.modules.get("steer_envs.llm.vllm_engine")
        roots = set(getattr(engine, "ENGINE_PIDS", ()))
        for proc in self.process.children(recursive=True):
            try:
                if ENGINE_MODULE in " ".join(proc.cmdline()):
                    roots.add(proc.pid)
            except psutil.Error:
                pass
        found: dict[int, object] = {}
        for pid in roots:
            try:
                root = psutil.Process(pid)
                found.update((p.pid, p) for p in [root, *root.children(recursive=True)])
            except psutil.Error:
                pass
        return list(found.values())

    def _suite_processes(self) -> list:
        engines = {proc.pid for proc in self._engine_processes()}
        return [proc for proc in [self.process, *self.process.children(recursive=True)] if proc.pid not in engines]

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            used, test = self._tree_memory(), self.current
            if used > self.test_peaks.get(test, 0):
                self.test_peaks[test] = used
            if used > self.peak:
                self.peak, self.peak_test = used, test
            engines = self._memory_of(self._engine_processes())
            if engines > self.engine_peak:
                self.engine_peak, self.engine_peak_test = engines, test

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        yield  # after the test's fixtures (and, at a module's end, the module's) are torn down
        if nextitem is None or nextitem.path != item.path:
            release_freed_memory()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        own = self.process.memory_info().rss
        if self._own_rss:
            self.retained[self.current] = own - self._own_rss
        self.current, self._own_rss = item.nodeid, own

    def pytest_terminal_summary(self, terminalreporter) -> None:
        self._stop.set()
        gb = self.peak / 1e9
        terminalreporter.write_line(
            f"peak memory of the test processes: {gb:.2f} GB (during {_short(self.peak_test)}); "
            f"budget {self.budget_gb:g} GB, margin {self.budget_gb - gb:+.2f} GB ({1 - gb / self.budget_gb:.0%})"
        )
        if self.engine_peak:
            terminalreporter.write_line(
                f"peak memory of the inference engines the tests started (outside the budget): "
                f"{self.engine_peak / 1e9:.2f} GB (during {_short(self.engine_peak_test)})"
            )
        if gb > self.budget_gb:
            terminalreporter.write_line(
                f"OVER THE MEMORY BUDGET (${BUDGET_ENV}): look at {_short(self.peak_test)}", red=True
            )
        # the next heaviest tests: where the margin under the budget is thinnest
        heaviest = sorted(self.test_peaks.items(), key=lambda kv: -kv[1])[:5]
        terminalreporter.write_line(
            "heaviest tests (peak memory of the process tree while each ran): "
            + "; ".join(f"{_short(name)} {peak / 1e9:.2f} GB" for name, peak in heaviest)
        )
        # what the test process keeps after a test (caches, models) is carried into every later test's peak
        kept = sorted(self.retained.items(), key=lambda kv: -kv[1])[:5]
        if kept:
            terminalreporter.write_line(
                "memory the test process kept after a test (largest): "
                + "; ".join(f"{_short(name)} +{growth / 1e9:.2f} GB" for name, growth in kept)
            )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self._stop.set()
        report = os.environ.get(REPORT_ENV)
        if report:  # every test's peak, to compare two runs test by test (what varies, and by how much)
            import json

            record = {"budget_gb": self.budget_gb, "peak": self.peak, "peak_test": self.peak_test}
            with open(report, "w", encoding="utf-8") as out:
                json.dump({**record, "tests": self.test_peaks}, out, indent=0)
        if self.peak / 1e9 > self.budget_gb and session.exitstatus == 0:
            session.exitstatus = 1


def release_freed_memory() -> None:
    """Collect unreachable objects, then ask glibc to return its free heap pages (``malloc_trim``) to the system.
    A no-op for the allocator where the C library is not glibc."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        pass


def register(config) -> None:
    try:
        import psutil  # noqa: F401
    except ImportError:  # pragma: no cover - psutil comes with the test extra
        return
    budget = float(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET_GB))
    config.pluginmanager.register(MemoryBudget(budget), "steer_envs_memory_budget")


def _short(nodeid: str | None, limit: int = 160) -> str | None:
    """A test id fit for one summary line: a parametrised id can hold a 1 MB input (the hostile-string tests)."""
    if nodeid is None or len(nodeid) <= limit:
        return nodeid
    return f"{nodeid[:limit]}…[{len(nodeid) - limit} more characters]"
