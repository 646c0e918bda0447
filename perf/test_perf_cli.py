"""How fast the command line answers (pytest-benchmark): ``steer-envs --help`` lists every command without
importing any command's module (:mod:`steer_envs.cli.commands`), so it answers in well under the testbed's target of
2 s; ``eval --help`` imports the evaluation harness and every method's options, for scale.

Run: ``pytest perf/test_perf_cli.py --benchmark-enable -q``. Each round is a fresh interpreter, as a
user's shell starts one (the console script's own start-up included).
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

#: the target for ``steer-envs --help``, in seconds of a fresh process (CPU time: the wall time of a free machine)
HELP_TARGET_S = 2.0
#: timed processes per command (after one warm-up process)
HELP_ROUNDS, EVAL_HELP_ROUNDS = 5, 2


def _command() -> list[str]:
    script = shutil.which("steer-envs")
    return [script] if script else [sys.executable, "-m", "steer_envs"]


def _run(*args: str) -> str:
    done = subprocess.run([*_command(), *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class CpuMeter:
    """Runs the command line as :func:`_run` does and keeps each process's CPU seconds (user + system): the wall
    time of a free machine, which other jobs on a shared machine do not inflate as they inflate the wall time."""

    seconds: list[float] = field(default_factory=list)

    def __call__(self, *args: str) -> str:
        before = _cpu_seconds()
        out = _run(*args)
        self.seconds.append(_cpu_seconds() - before)
        return out


def _timed(benchmark, command: tuple[str, ...], rounds: int, **extra: object) -> str:
    """``steer-envs COMMAND`` timed over ``rounds`` fresh processes after one warm-up; wall and CPU time recorded."""
    meter = CpuMeter()
    out = benchmark.pedantic(meter, args=command, rounds=rounds, iterations=1, warmup_rounds=1)
    timed = meter.seconds[-rounds:]
    benchmark.extra_info.update(
        {
            "command": " ".join(("steer-envs", *command)),
            "rounds": rounds,
            "cpu_s_mean": sum(timed) / len(timed),
            "cpu_s_min": min(timed),
            **extra,
        }
    )
    return out


def test_top_level_help(benchmark):
    out = _timed(benchmark, ("--help",), HELP_ROUNDS, target_cpu_s=HELP_TARGET_S)
    assert "serve-env" in out and "eval" in out  # core and plugin commands are listed


def test_top_level_help_costs_under_the_target_in_cpu_time():
    """The CPU seconds one ``--help`` process spends (user + system): its wall time on a free machine, and a
    measure that other jobs on a shared machine do not inflate as they inflate the wall time."""
    _run("--help")  # warm the file cache and the bytecode
    meter = CpuMeter()
    meter("--help")
    (cpu,) = meter.seconds
    assert cpu < HELP_TARGET_S, f"steer-envs --help spent {cpu:.2f} CPU seconds (target < {HELP_TARGET_S} s)"


def test_top_level_help_imports_no_command_module():
    code = (
        "import sys; from steer_envs.cli.main import build_parser; build_parser(configure=()); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'torch', 'bm25s', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_eval_help(benchmark):
    out = _timed(benchmark, ("eval", "--help"), EVAL_HELP_ROUNDS)
    assert "best_fixed_rule" in out
