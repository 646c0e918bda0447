"""``steer-envs eval`` end to end on the real data and the simulated executor: kill-and-resume, pairing,
refusal of a different config, unknown methods."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder, label_filename
from benchmarks.harness.runner import KILL_AFTER_ENV, complete_methods, write_summary
from steer_envs.cli.main import main

PROTOCOL = ["--benchmarks", "nq", "musique", "--split", "dev", "--limit", "4", "--seeds", "2", "--no-progress"]
METHODS = ["no_supervision", "random:p=0.3", "drift_rule"]
PER_METHOD = 2 * 4 * 2


def _eval(out, extra_env=None, methods=METHODS):
    env = {**os.environ, **(extra_env or {})}
    env.pop(KILL_AFTER_ENV, None) if not extra_env else None
    return subprocess.run(
        [sys.executable, "-m", "steer_envs.cli.main", "eval", "--method", *methods, "--out", str(out), *PROTOCOL],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def _lines(run, label):
    path = run / "episodes" / f"{label_filename(label)}.jsonl"
    return path.read_text().splitlines() if path.is_file() else []


@pytest.mark.slow
def test_killed_eval_resumes_without_redoing_finished_episodes(tmp_path):
    straight = tmp_path / "straight"
    assert _eval(straight).returncode == 0

    killed = tmp_path / "killed"
    first = _eval(killed, {KILL_AFTER_ENV: str(PER_METHOD + 5)})  # dies inside the second method
    assert first.returncode == -signal.SIGKILL
    assert len(_lines(killed, "no_supervision")) == PER_METHOD
    done_before = _lines(killed, "random:p=0.3")
    assert len(done_before) == 5
    assert not (killed / "metrics.json").exists()

    second = _eval(killed)
    assert second.returncode == 0, second.stderr
    assert "resuming: 5 finished episode(s) kept" in second.stdout
    after = _lines(killed, "random:p=0.3")
    assert after[:5] == done_before  # byte-identical (wall times included): nothing was redone
    assert len(after) == PER_METHOD and len(_lines(killed, "drift_rule")) == PER_METHOD

    def numbers(run):
        return json.loads((run / "metrics.json").read_text())["methods"]

    assert numbers(killed) == numbers(straight)
    assert (killed / "table.md").read_text() == (straight / "table.md").read_text()

    # a third run has nothing left to do
    third = _eval(killed)
    assert third.returncode == 0 and third.stdout.count("0 to run") == len(METHODS)


@pytest.mark.slow
def test_every_method_in_the_table_ran_on_the_same_tasks_and_seeds(tmp_path):
    run = tmp_path / "run"
    assert _eval(run).returncode == 0
    folder = RunFolder(run)
    expected = {(t.id, s) for t in folder.config.tasks() for s in range(folder.config.seeds)}
    complete, partial = complete_methods(folder)
    assert list(complete) == ["no_supervision", "random:p=0.3", "drift_rule"] and not partial
    for label, records in complete.items():
        assert sorted((r.task_id, r.seed) for r in records) == sorted(expected), label
    # identical env seeds: a method that never intervenes reproduces no supervision episode by episode
    none = {(r.task_id, r.seed): (r.f1, r.executor_turns) for r in complete["no_supervision"]}
    zero = _eval(run, methods=["random:p=0.0"])
    assert zero.returncode == 0
    again = {(r.task_id, r.seed): (r.f1, r.executor_turns) for r in complete_methods(folder)[0]["random:p=0.0"]}
    assert again == none
    # an unfinished method is kept out of the table instead of being compared on fewer tasks
    with open(run / "episodes" / f"{label_filename('drift_rule')}.jsonl") as fh:
        kept = fh.readlines()[:-3]
    with open(run / "episodes" / f"{label_filename('drift_rule')}.jsonl", "w") as fh:
        fh.writelines(kept)
    summaries, table = write_summary(folder, resamples=200)
    assert "drift_rule" not in [s.method for s in summaries]
    assert f"drift_rule: incomplete ({PER_METHOD - 3}/{PER_METHOD}" in table
    assert all(s.n_tasks == 8 and s.n_seeds == 2 for s in summaries)


def test_run_folder_of_another_config_is_refused_with_a_clear_message(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["eval", "--method", "no_supervision", "--out", str(out), *PROTOCOL]) == 0  # episodes: a claim
    code = main(
        ["eval", "--method", "no_supervision", "--out", str(out), *PROTOCOL[:-3], "--seeds", "1", "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "different configuration" in err and "seeds: folder has 2, this run asks for 1" in err
    assert "Traceback" not in err
    assert len(_lines(out, "no_supervision")) == 16  # the folder's episodes untouched


def test_unknown_method_lists_the_known_ones(tmp_path, capsys):
    code = main(["eval", "--method", "no_such_method", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2
    for name in ("no_supervision", "random", "always", "drift_rule", "steering_rl", "filtered_bc", "sb3_ppo"):
        assert name in err
    assert not (tmp_path / "run").exists()


def test_unknown_method_option_lists_the_valid_ones(tmp_path, capsys):
    code = main(["eval", "--method", "random:rate=3", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "no option 'rate'" in err and "p (default" in err


def test_an_eval_that_scores_no_task_exits_non_zero_prints_no_f1_and_says_why(tmp_path):
    """A down model server: every episode fails. A failure is not an outcome, so the table has no F1 (a dash, and
    null in metrics.json, never 0.0), the command exits 1 and names the first failure; the episodes are recorded."""
    from steer_envs.llm.vllm_engine import free_port

    port = free_port()  # nothing listens there: every request is refused
    executor = f"openai:m@http://127.0.0.1:{port}/v1?timeout=2&max_retries=1&backoff=0.01&max_backoff=0.02"
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "steer_envs.cli.main", "eval", "--executor", executor, "--method", "no_supervision"]
        + ["drift_rule", "--out", str(out), "--benchmarks", "nq", "--split", "dev", "--limit", "2", "--seeds", "1"]
        + ["--max-turns", "2", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "no task was scored: 4 episode(s) failed" in proc.stderr
    assert f"127.0.0.1:{port}" in proc.stderr.split("The first failure", 1)[1]  # the failure names the server
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("| no_supervision", "| drift_rule"))]
    assert len(rows) == 2 and all(row.split("|")[2:6] == [" – "] * 4 for row in rows), rows  # nq, avg, int., turns
    metrics = json.loads((out / "metrics.json").read_text())["methods"]
    assert [(m["n_tasks"], m["avg_f1"], m["failed"]) for m in metrics] == [(0, None, 2), (0, None, 2)]
    for label in ("no_supervision", "drift_rule"):
        assert len(_lines(out, label)) == 2 and all(json.loads(x)["failed"] for x in _lines(out, label))


def test_episode_records_hold_each_decision_and_report_actions_shows_them(tmp_path, capsys):
    """Every record keeps one action per decision (``pass`` or a note's name); ``report RUN --actions`` prints,
    per method, the share of episodes taking each action at each decision, and report.md holds the same."""
    out = tmp_path / "run"
    proc = _eval(out, methods=["no_supervision", "random:p=0.5"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    for label in ("no_supervision", "random:p=0.5"):
        records = [json.loads(line) for line in _lines(out, label)]
        assert records and all(len(r["actions"]) == r["decisions"] >= 1 for r in records)
        notes = [a for r in records for a in r["actions"] if a != "pass"]
        assert sum(r["interventions"] for r in records) == len(notes)  # a non-pass decision is an intervention
    assert {a for line in _lines(out, "no_supervision") for a in json.loads(line)["actions"]} == {"pass"}
    assert main(["report", str(out), "--actions"]) == 0
    printed = capsys.readouterr().out
    section = printed.split("### `random:p=0.5`", 1)[1]
    head, _, first = section.strip().splitlines()[2:5]
    assert "`pass`" in head and first.startswith("| 1 | 16 |")  # 16 episodes took a first decision
    names = [cell.strip(" `") for cell in head.split("|")[3:-1]]
    assert any(name != "pass" for name in names)  # its notes are columns
    assert not (out / "report.md").exists()  # --actions writes nothing
    assert main(["report", str(out)]) == 0
    assert "### `random:p=0.5`" in (out / "report.md").read_text()


def test_a_command_refused_before_any_episode_leaves_no_claim_on_its_folder(tmp_path, capsys):
    """A typo in --executor is refused before any episode ran; the corrected command then runs in the same --out
    (eval and compare alike), while a folder that holds episodes still refuses another protocol."""
    out = tmp_path / "run"
    small = ["--benchmarks", "nq", "--limit", "1", "--seeds", "1", "--split", "dev", "--no-progress"]
    assert main(["eval", "--executor", "sim:defualt", "--method", "no_supervision", "--out", str(out), *small]) == 2
    assert "unknown simulator profile 'defualt'" in capsys.readouterr().err
    assert main(["eval", "--executor", "sim:default", "--method", "no_supervision", "--out", str(out), *small]) == 0
    assert _lines(out, "no_supervision")
    assert main(["eval", "--executor", "sim:loopy", "--method", "no_supervision", "--out", str(out), *small]) == 2
    assert "different configuration" in capsys.readouterr().err  # episodes ran here: the folder is claimed
    compare = ["compare", "--protocol", "demo-quick", "--out", str(tmp_path / "cmp"), "--no-progress"]
    assert main([*compare, "--executor", "sim:defualt"]) == 2
    assert RunFolder(tmp_path / "cmp" / "dev", EvalConfig(executor="sim:default", split="dev", limit=2)).config
