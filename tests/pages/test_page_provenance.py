"""Every commit a results page names (its setting cards, its "measured at" lines) is a clean commit of this branch's
history: a number whose code cannot be checked out, or that came from uncommitted edits, cannot be reproduced.

Pages measured before this rule held are listed in :data:`NOT_YET_CLEAN` with what remeasures them; a listed page
that has become clean fails here until it is taken off the list, so the list only shrinks.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from steer_envs.paths import REPO_ROOT

DOCS = REPO_ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("results*.md")) + ["steering_learning.md", "../BENCHMARKS.md"]
#: a short commit id in a code span, as the setting cards write it (``abc1234`` or ``abc1234+dirty``)
COMMIT = re.compile(r"`([0-9a-f]{7})(\+dirty)?`")
#: page -> the run that would make it clean (its tables come from dirty trees or commits no longer in the history)
NOT_YET_CLEAN: dict[str, str] = {}


def is_ancestor(commit: str) -> bool:
    run = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "merge-base", "--is-ancestor", commit, "HEAD"], capture_output=True
    )
    return run.returncode == 0


def unclean_commits(page: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    found = sorted(set(COMMIT.findall(text)))
    return [c + d for c, d in found if d or not is_ancestor(c)]


@pytest.mark.parametrize("page", PAGES)
def test_every_commit_a_page_names_is_a_clean_commit_of_this_history(page):
    bad = unclean_commits(page)
    if page in NOT_YET_CLEAN:
        assert bad, f"{page} is clean now: take it off NOT_YET_CLEAN"
    else:
        assert not bad, f"{page} names {bad}: remeasure from a clean commit of this branch"


def test_the_check_can_fail(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.DOCS", tmp_path)
    (tmp_path / "page.md").write_text("*Setting: commit `abc1234+dirty`; commit `0000000`.*", encoding="utf-8")
    assert unclean_commits("page.md") == ["0000000", "abc1234+dirty"]


#: an absolute path of some machine inside a committed JSON string (not a URL's path: ``http://h:1/v1`` is preceded
#: by a word character)
MACHINE_PATH = re.compile(r"(?<![\w:/.~])/(?:[\w.-]+/)+[\w.-]*")


def machine_paths(text: str) -> list[str]:
    import json

    found: list[str] = []

    def walk(value) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            found.extend(MACHINE_PATH.findall(value))

    walk(json.loads(text))
    return found


def test_committed_json_names_no_machine_folder():
    """Summaries record the commands that made them; a folder of the machine they ran on means nothing to a
    reader (``benchmarks.harness.provenance.portable_command`` writes ``RUNS/...`` instead)."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "*.json"], capture_output=True, text=True)
    bad = {
        name: paths[:3]
        for name in listed.stdout.split()
        if (paths := machine_paths((REPO_ROOT / name).read_text(encoding="utf-8")))
    }
    assert not bad, f"absolute paths in committed JSON: {bad}"


def test_recorded_commands_are_portable_and_the_path_check_can_fail():
    from benchmarks.harness.provenance import portable_command

    argv = ["--out", "/srv/me/runs/a", "--checkpoints=/srv/me/runs/b/ckpt", "--config", str(REPO_ROOT / "docs/x.toml")]
    command = portable_command("python -m tool", argv)
    assert command == "python -m tool --out RUNS/a --checkpoints=RUNS/b/ckpt --config docs/x.toml"
    assert machine_paths('{"command": "run --out /srv/me/runs/a"}') == ["/srv/me/runs/a"]
    assert machine_paths('{"url": "http://127.0.0.1:8000/v1", "rel": "runs/a"}') == []
