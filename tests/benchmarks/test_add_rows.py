"""Rows added to a finished profile's summary (``results_doc --add-rows``): planning and verification at their own
rate, trained with the summary's RL trainer options and training seeds, evaluated on its tasks and seeds with no run
folder of the first run left, paired with its stored episodes; the stored rows keep their numbers and the page shows
the new rows (or, without them, says they are not measured, with the command)."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.harness.comparison import own_rate_labels, own_rate_spec
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.protocols import OWN_RATE_ROWS
from benchmarks.harness.results_summary import EPISODES_FILE, SUMMARY_FILE, SUMMARY_ROOT, read_episodes
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.stats import HierarchicalBootstrap
from benchmarks.harness.summary_rows import StoredProfile, check_same_setting
from benchmarks.pages import get_page
from steer_envs.cli.main import main as cli_main
from steer_envs.errors import SteerEnvsError
from tests.benchmarks.support import ONLY_FAST_ROWS, TINY, results_doc_argv, summaries_of

RL_SPEC = "steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800"


def test_own_rate_rows_take_rl_steerings_trainer_and_a_bank_that_lasts():
    # the RL steerer's values of every trainer option (its defaults too: planning's own defaults are smaller)
    assert own_rate_labels(RL_SPEC, "planning_rl", 3) == [
        f"planning_rl:G=4,N=8,bank_tasks=960,k=96,m=30,seed={s}" for s in range(3)
    ]  # 800 tasks x 3 rollouts at one decision each < 30 x 96 states: raised to 960
    assert own_rate_spec("steering_rl:m=2,k=4,G=2,N=2,bank_tasks=16,tau=0.2", "verification_rl") == (
        "verification_rl:G=2,N=2,bank_tasks=16,k=4,m=2"
    )  # τ is a deploy option: the row keeps its own
    assert own_rate_spec("steering_rl", "planning_rl") == "planning_rl:N=16,bank_tasks=1707,k=128,m=40"
    assert own_rate_labels(RL_SPEC, "planning_untrained", 2) == [
        "planning_untrained:seed=0",
        "planning_untrained:seed=1",
    ]


def test_a_row_at_its_own_rate_is_never_the_star_of_the_rate_matched_rows():
    from benchmarks.harness.stats import RowRuns, summarize_rows
    from benchmarks.harness.tables import HEADROOM, closing_line, comparison_table
    from steer_envs.episodes import EpisodeRecord

    def row(name: str, f1: float) -> RowRuns:
        records = [EpisodeRecord(name, f"{b}/{i}", b, 0, f1, f1, f1) for i, b in enumerate(["nq", "musique"] * 5)]
        return RowRuns(name, {name: records})

    rows = [row("no_supervision", 0.4), row("planning_rl", 0.9), row("steering_rl", 0.5)]
    summaries = summarize_rows(rows, ["nq", "musique"])
    not_best = HEADROOM | {"planning_rl"}
    table = comparison_table(summaries, ["nq", "musique"], {}, {}, not_best=not_best)
    assert [line for line in table.splitlines() if "★" in line][0].startswith("| **★ RL steering")
    line = closing_line(summaries, "steering_rl", None, {}, not_best=not_best)
    assert line.startswith("**Verdict:** RL steering (the paper's trainer) has the highest average F1 of the rate-")
    assert "of the rate-matched" not in closing_line(summaries[::2], "steering_rl", None, {}, not_best=not_best)


def _stored(folder: RunFolder, pairs: set[tuple[str, int]]) -> StoredProfile:
    from benchmarks.harness.setting import corpus_card, executor_hash

    corpus, sha = corpus_card(None)
    bench = {t.id: t.benchmark for t in folder.config.tasks()}
    card = {"corpus": corpus, "corpus_sha": sha, "executor_hash": executor_hash("sim:default")}
    row = {"row": "no_supervision", "label": "no_supervision"}
    episodes = [{**row, "task_id": t, "benchmark": bench[t], "seed": s} for t, s in sorted(pairs)]
    summary = {"card": card, "rows": {"no_supervision": {"labels": ["no_supervision"]}}}
    return StoredProfile(folder.root, summary, episodes)


def test_rows_that_would_not_pair_are_refused_before_any_training(tmp_path):
    folder = RunFolder(tmp_path / "test", EvalConfig(benchmarks=("nq", "musique"), limit=2, seeds=2))
    pairs = {(t.id, s) for t in folder.config.tasks() for s in range(2)}
    check_same_setting(folder, _stored(folder, pairs))  # the same tasks, seeds, corpus and profile: pairs
    with pytest.raises(SteerEnvsError, match="would not pair"):
        check_same_setting(folder, _stored(folder, pairs - {min(pairs)}))  # the task data changed since
    stored = _stored(folder, pairs)
    stored.summary["card"]["executor_hash"] = "0" * 12
    with pytest.raises(SteerEnvsError, match="changed since"):
        check_same_setting(folder, stored)


def test_a_summary_without_the_rows_says_so_with_the_command_that_adds_them(tmp_path):
    text = get_page("results").build(SUMMARY_ROOT, tmp_path / "results.md").read_text(encoding="utf-8")
    from benchmarks.harness.results_summary import LLM_DIR
    from benchmarks.harness.summary_transfer import TRANSFER_DIR

    others = (LLM_DIR, TRANSFER_DIR)  # summaries that are not a profile's
    summarised = [p.parent.name for p in SUMMARY_ROOT.glob(f"*/{SUMMARY_FILE}") if p.parent.name not in others]
    for name in summarised:
        summary = json.loads((SUMMARY_ROOT / name / SUMMARY_FILE).read_text(encoding="utf-8"))
        missing = [row for row in OWN_RATE_ROWS if row not in summary["rows"]]
        if missing:
            command = f"--profiles {summary['executor']} --add-rows {' '.join(missing)}"
            assert f"Not measured on this profile yet: `{missing[0]}`" in text and command in text


def test_rows_added_to_a_summary_pair_with_its_stored_episodes(tmp_path):
    from benchmarks.harness.results_doc import main as results_main

    runs, doc = tmp_path / "runs", tmp_path / "docs" / "results.md"
    assert results_main(results_doc_argv(runs, doc, *ONLY_FAST_ROWS, train_seeds=2, max_probes=2, llm_limit=0)) == 0
    root = summaries_of(runs)
    before = json.loads((root / "sim_default" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert "planning_rl" not in before["rows"] and "Not measured on this profile yet" in doc.read_text("utf-8")
    shutil.rmtree(runs)  # another machine: only the summary is left

    added = ["planning_rl", "verification_rl"]
    argv = ["--summaries", str(root), "--doc", str(doc), "--out", str(tmp_path / "more"), "--no-progress"]
    assert results_main(["--profiles", "sim:default", "--add-rows", *added, *argv]) == 0
    summary = json.loads((root / "sim_default" / SUMMARY_FILE).read_text(encoding="utf-8"))
    episodes = read_episodes(root / "sim_default" / EPISODES_FILE)

    # the summary's RL trainer options and training seeds; the episodes on its (task, seed) pairs and benchmarks
    for name in added:
        assert summary["rows"][name]["labels"] == own_rate_labels(TINY, name, 2)
        assert summary["rows"][name]["knob"].startswith("own rate") and int(summary["rows"][name]["budget"]) > 0
    key = {(e["task_id"], e["benchmark"], e["seed"]) for e in episodes if e["row"] == "no_supervision"}
    for label in (label for name in added for label in summary["rows"][name]["labels"]):
        assert sorted((e["task_id"], e["benchmark"], e["seed"]) for e in episodes if e["label"] == label) == sorted(key)
    assert summary["episodes"]["count"] == len(episodes) == before["episodes"]["count"] + 2 * 2 * len(key)

    # the stored rows keep every number; the new rows' intervals are the paired ones from the stored episodes
    assert summary["summaries"][: len(before["summaries"]) - 1] == before["summaries"][:-1]  # oracle stays last
    for table in ("vs_none", "vs_rule", "pairwise"):
        assert all(p in summary[table] for p in before[table])
    stored = StoredProfile.read(root, "sim:default").runs()
    boot = HierarchicalBootstrap([stored["no_supervision"], stored["planning_rl"]], summary["benchmarks"])
    gain = boot.gain("planning_rl", "no_supervision")[1]
    pair = next(p for p in summary["vs_none"] if p["a"] == "planning_rl")
    assert (pair["mean"], pair["low"], pair["high"]) == (gain.mean, gain.low, gain.high)
    assert summary["plan"]["own_rate_rows"] == added and list(summary["rows"])[-1] == "oracle"
    assert summary["parts"][-1]["rows"] == added and "train added rows" in summary["parts"][-1]["seconds"]
    assert summary["card"]["commits"] and summary["added"][0]["rows"] == added

    # the page: the rows, their intervals against the best fixed rule, the command, the untrained ones still missing
    page = doc.read_text(encoding="utf-8")
    rule = next(p for p in summary["vs_rule"] if p["a"] == "verification_rl")
    assert "| Planning, RL |" in page and "| Verification, RL |" in page and "own rate (tau=0.5" in page
    assert f"| Verification, RL | {pair_text(summary, 'verification_rl')} | {pair_text(rule)} |" in page
    assert "results_doc --profiles sim:default --add-rows planning_rl verification_rl --no-progress\n" in page
    assert "Not measured on this profile yet: `planning_untrained`, `verification_untrained`" in page
    assert "Training budgets (env steps" in page and str(tmp_path) not in page
    rebuilt = tmp_path / "rebuilt.md"
    assert cli_main(["report", "results", "--out", str(root), "--doc", str(rebuilt)]) == 0
    assert rebuilt.read_text(encoding="utf-8") == page


def pair_text(summary_or_pair: dict, name: str | None = None) -> str:
    pair = summary_or_pair
    if name is not None:
        pair = next(p for p in summary_or_pair["vs_none"] if p["a"] == name)
    return f"{pair['mean']:+.2f} [{pair['low']:+.2f}, {pair['high']:+.2f}]"
