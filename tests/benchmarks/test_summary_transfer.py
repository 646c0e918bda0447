"""Transfer across profiles on the main page (``results_doc --transfer``): the source profile's RL steerers, with
their own dev-chosen τ and not retrained, evaluated on another profile's summarised tasks and seeds and paired with
its stored rows; written as a compact summary the page is rebuilt from."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.harness.results_summary import EPISODES_FILE, SUMMARY_FILE, read_episodes
from benchmarks.harness.stats import HierarchicalBootstrap, RowRuns
from benchmarks.harness.summary_rows import StoredProfile, stored_record
from benchmarks.harness.summary_transfer import TRANSFER_DIR, TRANSFERRED, read_transfer
from steer_envs.cli.main import main as cli_main
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT
from tests.benchmarks.support import results_doc_argv, summaries_of

QUICK = ("--without", "filtered_bc", "--without", "sb3_ppo", "--no-curves", "--spearman-tasks", "0", "--own-rate-rows")


@pytest.mark.slow
def test_a_steerer_trained_on_one_profile_is_paired_with_anothers_stored_rows(tmp_path):
    from benchmarks.harness.results_doc import main as results_main

    runs, doc = tmp_path / "runs", tmp_path / "results.md"
    for profile in ("sim:default", "sim:loopy"):
        argv = results_doc_argv(runs, doc, *QUICK, train_seeds=2, max_probes=2, llm_limit=0)
        argv[argv.index("--profiles") + 1] = profile
        assert results_main(argv) == 0
    root = summaries_of(runs)
    assert "## Transfer across profiles\n\nNot measured yet" in doc.read_text(encoding="utf-8")
    shutil.rmtree(runs / "sim_loopy")  # the target needs only its summary
    models = sorted((runs / "sim_default" / "checkpoints").rglob("*.pt"))

    common = ["--summaries", str(root), "--doc", str(doc), "--out", str(tmp_path / "more"), "--no-progress"]
    with pytest.raises(SteerEnvsError, match="no finished model"):  # a folder without the trained steerers
        results_main(["--transfer", "sim:default", "--transfer-from", str(tmp_path / "elsewhere"), *common])
    argv = ["--transfer", "sim:default", "--transfer-from", str(runs / "sim_default"), *common]
    assert results_main(argv) == 0
    data = read_transfer(root)
    (cell,) = data["cells"]  # the diagonal is the profile's own RL row, not a cell
    source = json.loads((root / "sim_default" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert (cell["source"], cell["target"]) == ("sim:default", "sim:loopy")
    assert cell["labels"] == source["rows"]["steering_rl"]["labels"]  # the source's τ, not re-tuned
    assert sorted((runs / "sim_default" / "checkpoints").rglob("*.pt")) == models  # nothing trained on the target
    assert not list((tmp_path / "more").rglob("*.pt"))

    # the transferred episodes cover the target's stored (task, seed) pairs; the intervals pair with its stored rows
    episodes = read_episodes(root / TRANSFER_DIR / EPISODES_FILE)
    target = StoredProfile.read(root, "sim:loopy")
    pairs = target.pairs("no_supervision")
    for label in cell["labels"]:
        assert {(e["task_id"], e["seed"]) for e in episodes if e["label"] == label} == pairs
    stored = target.runs()
    moved = RowRuns(
        TRANSFERRED, {lab: [stored_record(e) for e in episodes if e["label"] == lab] for lab in cell["labels"]}
    )
    runs_ = [stored["no_supervision"], stored["best_fixed_rule"], stored["steering_rl"], moved]
    boot = HierarchicalBootstrap(runs_, target.summary["benchmarks"])
    gain = boot.gain(TRANSFERRED, "best_fixed_rule")[1]
    pair = next(p for p in cell["pairwise"] if p["b"] == "best_fixed_rule")
    assert (pair["mean"], pair["low"], pair["high"]) == (gain.mean, gain.low, gain.high)

    # the page shows the cell, its card and command; a rerun keeps the cell; the page rebuilds without a run folder
    page = doc.read_text(encoding="utf-8")
    assert "| `sim:default` | `sim:loopy` |" in page and f"{pair['mean']:+.2f} [{pair['low']:+.2f}" in page
    assert "--transfer sim:default --transfer-from" in page and str(tmp_path / "more") not in page
    assert results_main(argv) == 0 and read_transfer(root)["cells"] == data["cells"]
    shutil.rmtree(runs)
    shutil.rmtree(tmp_path / "more")
    rebuilt = tmp_path / "rebuilt.md"
    assert cli_main(["report", "results", "--out", str(root), "--doc", str(rebuilt)]) == 0
    assert rebuilt.read_text(encoding="utf-8") == page


def test_the_committed_transfer_summary_was_measured_by_committed_code():
    import subprocess

    cells = []
    for root in ("main", "drift"):
        cells += (read_transfer(REPO_ROOT / "docs" / "results" / root) or {"cells": []})["cells"]
    assert cells
    for cell in cells:
        for commit in cell["commits"]:
            assert "dirty" not in commit and commit != "unknown", commit
            ancestor = subprocess.run(["git", "-C", str(REPO_ROOT), "merge-base", "--is-ancestor", commit, "HEAD"])
            assert ancestor.returncode == 0, f"{commit} is not an ancestor of HEAD"
