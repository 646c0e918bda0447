"""The lint and format gate: ruff (configured in ``pyproject.toml``) finds nothing and would reformat nothing.

Why in the suite: CI runs the README's one test command, so the gate runs wherever the tests do, with the ruff
pinned in the ``test`` extra (a new release's rules or style cannot turn a green tree red)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        import ruff  # noqa: F401
    except ImportError:
        pytest.fail('ruff is not installed: pip install -e ".[test]" (the test extra pins it)', pytrace=False)
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_lint_passes():
    done = ruff("check", "--no-cache", ".")
    assert done.returncode == 0, f"ruff check found problems (fix: ruff check --fix .):\n{done.stdout}{done.stderr}"


def test_ruff_format_leaves_every_file_as_it_is():
    done = ruff("format", "--no-cache", "--check", ".")
    assert done.returncode == 0, f"files ruff would reformat (fix: ruff format .):\n{done.stdout}{done.stderr}"


def test_the_gate_is_configured_in_pyproject():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "[tool.ruff]" in text and "[tool.ruff.lint]" in text
