"""Interruptions of ``train`` and ``eval`` as a shared cluster delivers them: Ctrl-C / SIGTERM stop cleanly with
the exact command that resumes; SIGKILL at random points (between rounds, mid-episode, in the middle of a
checkpoint write) never leaves a corrupt run folder; and the resumed result equals an uninterrupted one."""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agents.steering.checkpoint import load_checkpoint, read_jsonl
from agents.steering.trainer import CHECKPOINT_FILE, CONFIG_FILE, LOG_FILE, MODEL_FILE, load_model
from benchmarks.harness.runner import KILL_AFTER_ENV
from steer_envs.atomic import KILL_DURING_WRITE_ENV
from steer_envs.episodes import EpisodeLog
from tests.timing import wait_until

pytestmark = pytest.mark.slow

TINY = dict(m=3, k=6, G=3, N=2, bank_tasks=10, benchmarks=["nq", "hotpotqa"], eps_sel=0.5)
# long enough (2 methods x 232 episodes: nq 30 + musique 28 dev tasks x 4 seeds) that a signal sent after the 3rd
# episode lands mid-run: with 24 episodes a quiet machine finished the whole eval within the ~50 ms the test takes
# to send it, and the signal then hit the interpreter's shutdown (default action, exit -2) instead of the run
EVAL = [
    "eval",
    "--method",
    "no_supervision",
    "random:p=0.3",
    "--benchmarks",
    "nq",
    "musique",
    "--split",
    "dev",
    "--limit",
    "30",
    "--seeds",
    "4",
    "--no-progress",
]
FAULTS = (KILL_AFTER_ENV, KILL_DURING_WRITE_ENV)


def _cli(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "steer_envs", *args]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in FAULTS}
    env.update(extra)
    return env


def _train_args(out: Path, cfg: Path) -> list[str]:
    return ["train", "steering", "--executor", "sim:default", "--out", str(out), "--config", str(cfg), "--no-progress"]


def _wait_for(predicate, proc: subprocess.Popen, typical_s: float, bound_s: float = 300) -> None:
    """Wait until ``predicate()`` holds in the running ``proc``: the point where the test interrupts it."""

    def reached() -> bool:
        assert proc.poll() is None, "the run ended before the point where it was to be interrupted"
        return bool(predicate())

    wait_until(reached, bound_s, typical_s, "the point where the run is to be interrupted")


def _resume_command(stderr: str) -> list[str]:
    """The command the interrupted run printed after 'Resume with:'."""
    line = stderr.split("Resume with:\n", 1)[1].splitlines()[0].strip()
    args = shlex.split(line)
    assert args[0] == "steer-envs"
    return _cli(args[1:])


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_model(run)[0].checkpoint_state_dict()


def _same_training(a: Path, b: Path) -> None:
    rows_a, rows_b = read_jsonl(a / LOG_FILE), read_jsonl(b / LOG_FILE)
    assert [r["round"] for r in rows_a] == [r["round"] for r in rows_b] == list(range(TINY["m"]))
    for x, y in zip(rows_a, rows_b):
        assert x["loss"] == pytest.approx(y["loss"], abs=1e-6) and x["mean_q"] == y["mean_q"]
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys() and all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)


def _train_folder_is_sound(run: Path) -> None:
    """What a resume needs is complete: the config parses, the checkpoint and model load, log lines parse."""
    if (run / CONFIG_FILE).exists():
        json.loads((run / CONFIG_FILE).read_text())
    if (run / CHECKPOINT_FILE).exists():
        assert load_checkpoint(run / CHECKPOINT_FILE)["next_round"] <= TINY["m"]
    if (run / MODEL_FILE).exists():
        load_model(run)
    lines = (run / LOG_FILE).read_text().splitlines() if (run / LOG_FILE).exists() else []
    for line in lines[:-1]:  # only the last line may be torn (it is dropped on resume)
        json.loads(line)


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory) -> Path:
    cfg = tmp_path_factory.mktemp("cfg") / "tiny.json"
    cfg.write_text(json.dumps(TINY))
    return cfg


@pytest.fixture(scope="module")
def reference_training(tmp_path_factory, tiny_config) -> Path:
    out = tmp_path_factory.mktemp("ref") / "run"
    done = subprocess.run(_cli(_train_args(out, tiny_config)), env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_training_says_how_to_resume_and_the_resumed_run_equals_an_uninterrupted_one(
    tmp_path, tiny_config, reference_training, sig
):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        _cli(_train_args(out, tiny_config)), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_for(lambda: len(read_jsonl(out / LOG_FILE)) >= 1, proc, 5.5)  # round 0 checkpointed, round 1 running
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "steer-envs train: interrupted. Everything finished so far is saved in" in stderr
    assert "Traceback" not in stderr
    resume = _resume_command(stderr)
    assert resume[-1] == "--resume"
    _train_folder_is_sound(out)
    again = subprocess.run(resume, env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    _same_training(out, reference_training)


def test_sigkill_at_random_points_never_corrupts_training_and_the_result_is_unchanged(
    tmp_path, tiny_config, reference_training
):
    rng = random.Random(15)
    out = tmp_path / "chaos"
    kills = []
    for attempt in range(12):
        args = _train_args(out, tiny_config) + (["--resume"] if (out / CHECKPOINT_FILE).exists() else [])
        if attempt < 3:  # in the middle of an atomic write (config, checkpoint or model), at a random one
            k = rng.randint(1, 4)
            proc = subprocess.run(
                _cli(args), env=_env(**{KILL_DURING_WRITE_ENV: str(k)}), capture_output=True, text=True, timeout=600
            )
            code, how = proc.returncode, f"during write {k}"
        elif attempt < 6:  # at a random instant
            proc = subprocess.Popen(_cli(args), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            delay = rng.uniform(2.0, 14.0)
            try:
                code = proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            how = f"after {delay:.1f} s"
        else:  # finish
            proc = subprocess.run(_cli(args), env=_env(), capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stderr
            break
        if code == -signal.SIGKILL:
            kills.append(how)
        _train_folder_is_sound(out)
    print(f"training: {len(kills)} SIGKILLs survived ({', '.join(kills)})")
    assert len(kills) >= 4, kills
    _same_training(out, reference_training)


# -- eval ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reference_eval(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ref_eval") / "run"
    done = subprocess.run(_cli([*EVAL, "--out", str(out)]), env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def _metrics(run: Path) -> list[dict]:
    return json.loads((run / "metrics.json").read_text())["methods"]


def _eval_folder_is_sound(run: Path) -> None:
    for name in ("config.json", "methods.json"):
        if (run / name).exists():
            json.loads((run / name).read_text())
    for log in (run / "episodes").glob("*.jsonl") if (run / "episodes").exists() else []:
        EpisodeLog(log)  # repairs a torn last line; every kept record parses


def test_interrupted_eval_says_how_to_resume_and_ends_with_the_same_table(tmp_path, reference_eval):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        _cli([*EVAL, "--out", str(out)]), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    episodes = out / "episodes"
    _wait_for(
        lambda: episodes.exists() and sum(len(p.read_text().splitlines()) for p in episodes.glob("*.jsonl")) >= 3,
        proc,
        1.2,
    )
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "steer-envs eval: interrupted." in stderr and "Traceback" not in stderr
    resume = _resume_command(stderr)
    assert resume[3:] == [*EVAL, "--out", str(out)]  # the very same command: finished episodes are kept
    again = subprocess.run(resume, env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "resuming:" in again.stdout
    assert _metrics(out) == _metrics(reference_eval)


def test_sigkill_at_random_points_never_corrupts_an_eval_and_the_table_is_unchanged(tmp_path, reference_eval):
    rng = random.Random(16)
    out = tmp_path / "chaos"
    kills = []
    for attempt in range(10):
        fault = {}
        if attempt < 3:
            fault = {KILL_AFTER_ENV: str(rng.randint(1, 8))}  # after a random number of finished episodes
        elif attempt < 5:
            fault = {KILL_DURING_WRITE_ENV: str(rng.randint(1, 3))}  # mid-write of config / methods / table
        proc = subprocess.run(
            _cli([*EVAL, "--out", str(out)]), env=_env(**fault), capture_output=True, text=True, timeout=600
        )
        if proc.returncode == -signal.SIGKILL:
            kills.append(fault)
        else:
            assert proc.returncode == 0, proc.stderr
            if not fault:
                break
        _eval_folder_is_sound(out)
    print(f"eval: {len(kills)} SIGKILLs survived ({kills})")
    assert len(kills) >= 4, kills
    assert _metrics(out) == _metrics(reference_eval)
    expected = {log.name: len(EpisodeLog(log).records) for log in (reference_eval / "episodes").glob("*.jsonl")}
    assert expected and all(n > 0 for n in expected.values())
    for log in (out / "episodes").glob("*.jsonl"):
        records = EpisodeLog(log).records
        assert len({r.key for r in records}) == len(records) == expected[log.name]  # nothing lost, nothing run twice
