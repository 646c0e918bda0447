"""docs/leaderboard.md: every profile of the `standard` protocol, every row from a clean commit of this branch, the
field's aggregates beside the paired intervals, a performance profile per table; a user's entry of the same
setting joins its table. The committed page is what `steer-envs leaderboard` gives."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess

import pytest

from benchmarks.pages.leaderboard import DOC, SUMMARY_ROOTS, build
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT

PROFILES = ("sim:default", "sim:loopy", "sim:r1searcher", "sim:drift1", "sim:drift2", "sim:drift3")


def _tables(text: str) -> dict[str, str]:
    parts = re.split(r"^## `([^`]+)` — protocol `standard`\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_committed_page_has_every_profile_with_its_aggregates_and_profile_image():
    tables = _tables(DOC.read_text(encoding="utf-8"))
    assert set(PROFILES) <= set(tables)
    for profile, table in tables.items():
        head = next(line for line in table.splitlines() if line.startswith("| Method |"))
        assert "IQM [95% CI]" in head and "P(> none)" in head and "Budget (env steps)" in head, profile
        rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| Method")]
        assert len(rows) >= 8, profile  # the seven built-in contenders and the oracle at least
        assert sum("★" in row for row in rows) == 1, profile
        image = re.search(r"!\[[^\]]*\]\((leaderboard/[^)]+\.png)\)", table).group(1)
        assert (DOC.parent / image).read_bytes()[:4] == b"\x89PNG", profile


def test_every_row_of_the_page_was_measured_by_a_clean_commit_of_this_branch():
    commits = set(re.findall(r"\*Commits:\* (.*?)\.", DOC.read_text(encoding="utf-8")))
    assert commits
    for line in commits:
        for commit in re.findall(r"`([^`]+)`", line):
            assert "dirty" not in commit and commit != "unknown", commit
            ancestor = subprocess.run(["git", "-C", str(REPO_ROOT), "merge-base", "--is-ancestor", commit, "HEAD"])
            assert ancestor.returncode == 0, f"{commit} is not in this branch's history"


@pytest.mark.slow
def test_the_committed_page_is_what_the_command_rebuilds(tmp_path):
    rebuilt = build(tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert rebuilt == DOC.read_text(encoding="utf-8")


def _user_entry(tmp_path, renamed: str, folder: str = "mine", target: float | None = None):
    """A user's run of the standard setting on sim:default: the committed summary with its random row renamed (the
    same episodes under a new method's name), its copy of no supervision's average set to 99.9 (a table shows each
    row from the entry it reads that row from), and the plan's target moved when ``target`` is given."""
    source = REPO_ROOT / "docs" / "results" / "main" / "sim_default"
    dest = tmp_path / folder / "leaderboard" / "sim_default"
    dest.mkdir(parents=True)
    summary = json.loads((source / "summary.json").read_text(encoding="utf-8"))
    summary["rows"] = {renamed if k == "random" else k: v for k, v in summary["rows"].items()}
    for s in summary["summaries"]:
        s["method"] = renamed if s["method"] == "random" else s["method"]
        s["avg_f1"] = 99.9 if s["method"] == "no_supervision" else s["avg_f1"]
    if target is not None:
        summary["plan"]["target"] = target
    for key in ("vs_none", "vs_rule", "pairwise"):
        for pair in summary[key]:
            pair.update({k: renamed for k in ("a", "b") if pair[k] == "random"})
    (dest / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    lines = gzip.decompress((source / "episodes.jsonl.gz").read_bytes()).decode().splitlines()
    episodes = [json.loads(x) for x in lines]
    for e in episodes:
        e["row"] = renamed if e["row"] == "random" else e["row"]
    (dest / "episodes.jsonl.gz").write_bytes(gzip.compress("\n".join(map(json.dumps, episodes)).encode()))
    return tmp_path / folder


def test_a_user_entry_of_the_same_setting_joins_the_committed_table(tmp_path):
    roots = (tmp_path / "committed",)
    shutil.copytree(REPO_ROOT / "docs" / "results" / "main" / "sim_default", roots[0] / "sim_default")
    entry = _user_entry(tmp_path, "my_method")
    text = build(tmp_path / "page.md", added=(entry,), roots=roots).read_text(encoding="utf-8")
    (table,) = _tables(text).values()
    mine = next(line for line in table.splitlines() if line.startswith("| my_method"))
    random = next(line for line in table.splitlines() if line.startswith("| Random"))
    assert "`mine` (added)" in mine and "docs/results/main" not in mine
    none = next(line for line in table.splitlines() if line.startswith("| No supervision"))
    assert "| 40.5 |" in none and "99.9" not in table  # the committed table's own row, not the entry's copy
    # the same episodes under another name: the same aggregates, from the committed table's normalisation
    assert mine.split("|")[3:12] == random.split("|")[3:12]
    elsewhere = _user_entry(tmp_path, "other_method", "other", target=2.0)  # another rate target: not comparable
    text = build(tmp_path / "page2.md", added=(elsewhere,), roots=roots).read_text(encoding="utf-8")
    committed, own = text.split("## `sim:default` — protocol `standard`\n")[1:]  # two tables of one profile
    assert "| other_method" in own and "| other_method" not in committed and "`other` (added)" in own
    with pytest.raises(SteerEnvsError, match="another protocol"):
        build(tmp_path / "page.md", protocol="quick", added=(entry,), roots=roots)


def test_the_committed_summaries_are_the_leaderboard_sources():
    found = {p.parent.name for root in SUMMARY_ROOTS for p in root.glob("*/summary.json")}
    assert {p.replace(":", "_") for p in PROFILES} <= found
