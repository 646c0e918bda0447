"""docs/extending.md, executed: the plugin package it describes is written out, installed offline into a folder
of this test, checked with ``check_executor``, run in an env (async spawned workers included) and through
``steer-envs eval``. Nothing registers the plugin but its entry points. The page's script runs as a reader runs it:
saved as a file, ``python check_firsthit.py`` in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.blocks import run_script

ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")


def _blocks(kind: str) -> list[tuple[str, str]]:
    """(tag value, code) of the fenced blocks preceded by ``<!-- kind: value -->``."""
    return re.findall(rf"<!-- {kind}: (\S+) -->\n```\w*\n(.*?)```", GUIDE, re.S)


def test_the_guide_declares_every_entry_point_group():
    pyproject = dict(_blocks("file"))["steer-envs-firsthit/pyproject.toml"]
    for group in ("steer_envs.executors", "steer_envs.retrievers", "steer_envs.methods"):
        assert f'[project.entry-points."{group}"]' in pyproject and f"`{group}`" in GUIDE


@pytest.mark.slow
def test_the_guide_builds_installs_checks_and_evaluates_a_plugin_executor(tmp_path, shared_data_dir):
    for name, code in _blocks("file"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
    site = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--target",
            str(site),
            str(tmp_path / "steer-envs-firsthit"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    assert list(site.glob("steer_envs_firsthit-*.dist-info/entry_points.txt"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}

    ((kind, script),) = _blocks("run")[:1]
    assert kind == "python"
    out = run_script(script, tmp_path, "check_firsthit.py", PYTHONPATH=env["PYTHONPATH"]).stdout  # as the page says
    assert "check_executor(firsthit:) on 2 task(s): 5 checks passed" in out
    answered = re.search(r"firsthit answered '(.*?)' after (\d+) turns", out)
    assert answered and answered.group(1) != "unknown" and int(answered.group(2)) == 2
    titles = out.split("titles retriever:")[1].splitlines()[0]
    assert "Nobel Prize in Physics" in titles
    assert re.search(r"async workers: \['<search> .*'\] turns \[1, 1\]", out)

    ((kind, command),) = _blocks("run")[1:]
    assert kind == "bash"
    command = command.replace("\\\n", " ").replace("steer-envs ", f"{sys.executable} -m steer_envs ", 1)
    cli = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stdout[-2000:] + cli.stderr[-2000:]
    assert "| no_supervision" in cli.stdout and "| verify_once" in cli.stdout
    assert (tmp_path / "runs" / "firsthit" / "metrics.json").is_file()
