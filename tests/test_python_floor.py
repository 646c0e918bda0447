"""The package keeps the Python floor that ``pyproject.toml`` declares (``requires-python``).

Installing every dependency into a second interpreter is too heavy for CI, so the check is the part of "imports on
the floor version" that our own code controls: every module compiles under that interpreter (syntax), and every
standard-library module it imports unconditionally exists there (``tomllib`` arrived in 3.11, for example; an
import guarded by an ``if``/``try`` is the fallback pattern and is allowed). The floor interpreter comes from
pyenv on the reference machine; a machine without it skips with the reason.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("steer_envs", "agents", "baselines", "benchmarks")


def declared_floor() -> tuple[int, int]:
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(r'requires-python\s*=\s*">=\s*(\d+)\.(\d+)"', text)
    assert match, "pyproject.toml declares no requires-python floor"
    return int(match.group(1)), int(match.group(2))


def floor_interpreter(version: tuple[int, int]) -> str | None:
    name = f"python{version[0]}.{version[1]}"
    candidates = [shutil.which(name)] + sorted(
        Path.home().glob(f".pyenv/versions/{version[0]}.{version[1]}.*/bin/python")
    )
    for candidate in candidates:
        if candidate and subprocess.run([str(candidate), "-c", "pass"], capture_output=True).returncode == 0:
            return str(candidate)
    return None


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def unconditional_stdlib_imports(path: Path) -> set[str]:
    """Top-level standard-library modules imported outside any ``if`` / ``try`` (those are version fallbacks)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.Try)):
            guarded.update(id(child) for child in ast.walk(node))
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names & set(sys.stdlib_module_names)


def test_the_floor_is_declared_once_and_supported_here():
    floor = declared_floor()
    assert sys.version_info[:2] >= floor, f"this interpreter {sys.version_info[:2]} is below the declared floor {floor}"


def test_every_module_compiles_and_finds_its_stdlib_on_the_floor_interpreter(tmp_path):
    floor = declared_floor()
    python = floor_interpreter(floor)
    if python is None:
        pytest.skip(
            f"no Python {floor[0]}.{floor[1]} interpreter on this machine (pyenv provides one on the reference machine)"
        )
    files = sources()
    assert len(files) > 100, "the package sources were not found"
    # compile() in memory: compileall would write cpython-3xx .pyc files beside the sources
    compile_all = "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, encoding='utf-8').read(), f, 'exec')"
    compiled = subprocess.run(
        [python, "-c", compile_all, *map(str, files)], capture_output=True, text=True, cwd=tmp_path
    )
    assert compiled.returncode == 0, f"sources do not compile on {python}:\n{compiled.stdout}{compiled.stderr}"
    needed = sorted(set().union(*(unconditional_stdlib_imports(p) for p in files)))
    probe = (
        "import importlib.util, json, sys; "
        "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))"
    )
    missing = json.loads(
        subprocess.run([python, "-c", probe, *needed], capture_output=True, text=True, check=True).stdout
    )
    assert not missing, (
        f"standard-library modules missing on Python {floor[0]}.{floor[1]}: {missing}; guard them "
        "with a version check and a backport (see agents/configio.py), or raise requires-python"
    )


def test_the_stdlib_check_sees_an_unguarded_import(tmp_path):
    """The AST check itself: an unguarded ``import tomllib`` is seen, the guarded fallback is not."""
    plain = tmp_path / "plain.py"
    plain.write_text("import tomllib\n")
    guarded = tmp_path / "guarded.py"
    guarded.write_text(
        "import sys\nif sys.version_info >= (3, 11):\n    import tomllib\nelse:\n    import tomli as tomllib\n"
    )
    assert "tomllib" in unconditional_stdlib_imports(plain)
    assert unconditional_stdlib_imports(guarded) == {"sys"}
