"""docs/extending.md, executed: the plugin package it describes is written out, installed offline into a folder
of this test, checked with ``check_executor``, run in an env (async spawned workers included) and through
``steer-envs eval``. Nothing registers the plugin but its entry points. The page's script runs as a reader runs it:
saved as a file, ``python check_firsthit.py`` in a fresh process."""

from __future__ import annotations

import json
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


#: what the test adds to the guide's compare command so that CI runs it in minutes: fewer tasks and benchmarks,
#: the tiny trainer of the demo's smoke protocol as the budget row, the two slow baselines left out
SMALLER = (
    " --limit 1 --dev-limit 2 --seeds 1 --benchmarks nq hotpotqa --without filtered_bc --without sb3_ppo"
    " --method steering_rl:G=2,N=2,bank_tasks=16,k=4,m=2 --no-progress"
)


@pytest.mark.slow
def test_the_guide_s_learned_method_enters_compare_and_the_leaderboard(tmp_path, shared_data_dir):
    """Section 4 as a user runs it: the REINFORCE package saved from the page and installed from a folder outside
    the repository, its commands run; it gets three training seeds, τ searched on dev per seed, the RL steerer's
    budget through its ``episodes`` option, a row in the table and one on the leaderboard page."""
    files = {name: code for name, code in _blocks("file") if name.startswith("steer-envs-turn-reinforce/")}
    assert set(files) == {"steer-envs-turn-reinforce/turn_reinforce.py", "steer-envs-turn-reinforce/pyproject.toml"}
    for name, code in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(code, encoding="utf-8")
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-cache-dir",
         "--disable-pip-version-check", "--target", str(site), str(tmp_path / "steer-envs-turn-reinforce")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    compare, leaderboard = [code.replace("\\\n", " ").strip() for kind, code in _blocks("learned")]
    assert compare.startswith("steer-envs compare --protocol quick") and "--method turn_reinforce" in compare
    assert leaderboard.startswith("steer-envs leaderboard") and "--add runs/quick" in leaderboard
    steer = f"{sys.executable} -m steer_envs "
    run = subprocess.run(
        compare.replace("steer-envs ", steer, 1) + SMALLER,
        shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = tmp_path / "runs" / "quick"
    row = json.loads((out / "comparison.json").read_text(encoding="utf-8"))["rows"]["turn_reinforce"]
    assert [re.search(r"seed=(\d)", label).group(1) for label in row["labels"]] == ["0", "1", "2"]
    assert all("tau=" in label for label in row["labels"]) and row["budget_matched"]
    choices = json.loads((out / "dev" / "choices.json").read_text(encoding="utf-8"))
    searched = [c for key, c in choices.items() if key.startswith("turn_reinforce")]
    assert len(searched) == 3 and all(c["split"] == "dev" and c["probes"] for c in searched)
    budget = json.loads((out / "budget_match.json").read_text(encoding="utf-8"))
    assert any(key.startswith("turn_reinforce") for key in budget)  # its episodes were set to the RL budget
    table = (out / "comparison.md").read_text(encoding="utf-8")
    assert "| turn_reinforce |" in table or "| **★ turn_reinforce**" in table
    assert "leaderboard entry:" in run.stdout

    page = subprocess.run(
        leaderboard.replace("steer-envs ", steer, 1),
        shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert page.returncode == 0, page.stdout[-3000:] + page.stderr[-3000:]
    text = (tmp_path / "runs" / "leaderboard.md").read_text(encoding="utf-8")
    (line,) = [x for x in text.splitlines() if x.startswith("| turn_reinforce") or x.startswith("| **★ turn_rein")]
    assert "| 3 |" in line and "(added)" in line and re.search(r"\| -?\d+\.\d\d \[-?\d+\.\d\d, -?\d+\.\d\d\] \|", line)
    assert (tmp_path / "runs" / "leaderboard" / "sim_default_quick.png").read_bytes()[:4] == b"\x89PNG"
