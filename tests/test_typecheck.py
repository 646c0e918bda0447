"""The type-check gate: mypy over the installed packages (``steer_envs``, ``agents``, ``baselines``), as configured
in pyproject.toml (``[tool.mypy]``).

mypy is pinned in the ``test`` extra, so the verdict changes only when the code does; the test checks that the
installed mypy is that pin before trusting its verdict.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the backport
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
INSTALL_HINT = "install the test extra: pip install -e '.[test]'"


def _pinned_mypy() -> str:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    pins = [req.split("==", 1)[1] for req in extra if req.replace(" ", "").startswith("mypy==")]
    assert pins, "the test extra pins no mypy version (mypy==X.Y.Z)"
    return pins[0]


@pytest.mark.slow
@pytest.mark.first
def test_the_installed_packages_type_check() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.fail(f"mypy is not installed; it is part of the test extra: {INSTALL_HINT}")
    installed, pinned = importlib.metadata.version("mypy"), _pinned_mypy()
    assert installed == pinned, f"mypy {installed} is installed, the gate is pinned to {pinned}: {INSTALL_HINT}"
    # the incremental cache goes under the suite's cache folder, not into the checkout
    cache = Path(os.environ["STEER_ENVS_CACHE"]) / "mypy"
    env = {**os.environ, "MYPY_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200
    )
    assert proc.returncode == 0, (
        f"mypy (config: pyproject.toml [tool.mypy]) exited with {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    )
