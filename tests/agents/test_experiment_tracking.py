"""Experiment tracking through accelerate (``log_with``) beside ``log.jsonl``, for both trainers: real short runs
with TensorBoard whose event files hold the log's numbers at step = the round/iteration, a clear error before any
training for an unknown or uninstalled tracker, nothing under ``trackers/`` by default, and run folders that resume
whether tracking is on or off (``log_with`` is never part of the fingerprint)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.actguide.config import ActGuideConfig
from agents.actguide.trainer import ActGuideTrainer
from agents.steering.config import SteeringConfig
from agents.steering.trainer import SteeringTrainer
from agents.trainer_base import TRACKER_PACKAGES, TRACKERS_DIR, RunFolder
from steer_envs.errors import SteerEnvsError
from tests.agents.support import small_actguide_args

STEERING = dict(m=2, k=8, G=4, N=2, bank_tasks=16, benchmarks=["nq", "hotpotqa"], eps_sel=0.5)
ACTGUIDE = small_actguide_args(budget=40)


def tensorboard_scalars(folder: Path) -> dict[str, dict[int, float]]:
    """Every scalar TensorBoard holds under ``folder`` (its event files, read back by TensorBoard's own reader):
    tag -> step -> value."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    event_dirs = sorted({p.parent for p in folder.rglob("events.out.tfevents.*")})
    assert event_dirs, f"no TensorBoard event files under {folder}"
    scalars: dict[str, dict[int, float]] = {}
    for event_dir in event_dirs:
        acc = EventAccumulator(str(event_dir))
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            scalars.setdefault(tag, {}).update({e.step: e.value for e in acc.Scalars(tag)})
    return scalars


def assert_tracked_as_logged(run: Path, project: str, step_key: str, keys: tuple[str, ...]) -> None:
    """The TensorBoard scalars of ``run`` are the numbers of its ``log.jsonl`` (float32 in TensorBoard), for every
    logged step."""
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    scalars = tensorboard_scalars(run / TRACKERS_DIR / project)
    for key in keys:
        assert set(scalars[key]) == {row[step_key] for row in rows}, key
        for row in rows:
            expected = float(row[key])  # a boolean is tracked as 0/1
            assert scalars[key][row[step_key]] == pytest.approx(expected, rel=1e-6, abs=1e-6), (key, row[step_key])
    assert "rescued_tasks" not in scalars and "tasks" not in scalars  # lists stay in log.jsonl only


def uninstalled_tracker() -> str:
    """One of accelerate's trackers whose package is not installed here."""
    from accelerate.tracking import get_available_trackers

    available = {t.value for t in get_available_trackers()}
    missing = [name for name in TRACKER_PACKAGES if name not in available]
    if not missing:
        pytest.skip("every tracker accelerate supports is installed")
    return missing[0]


@pytest.mark.slow
def test_steering_run_logs_the_log_rows_to_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    run = tmp_path / "run"
    trainer = SteeringTrainer(SteeringConfig(**STEERING, log_with=("tensorboard",)), run)
    trainer.run()
    assert_tracked_as_logged(run, "steering", "round", ("loss", "loss_grpo", "mean_q", "rollouts"))
    assert list((run / TRACKERS_DIR).iterdir()) == [run / TRACKERS_DIR / "steering"]
    assert_trackers_ended(trainer)


def assert_trackers_ended(trainer) -> None:
    """accelerate's end_training ran: its TensorBoard writer is closed (torch's SummaryWriter drops its writers)."""
    (tracker,) = trainer.accelerator.trackers
    assert tracker.writer.all_writers is None


@pytest.mark.slow
def test_actguide_run_logs_the_log_rows_to_tensorboard_and_resumes_a_folder_made_without_it(tmp_path):
    """Stopped after its first iteration without tracking, the run resumes with ``log_with`` on (the same
    fingerprint), and TensorBoard gets the iterations trained from then on, as log.jsonl has them."""
    pytest.importorskip("tensorboard")
    run = tmp_path / "run"
    ActGuideTrainer(ActGuideConfig(**ACTGUIDE, log_with=("tensorboard",)), run).run()
    assert_tracked_as_logged(run, "actguide", "iteration", ("unguided_success", "loss", "rollouts", "guidance_on"))

    class Stop(Exception):
        pass

    def stop_after_first(i, record):
        if i == 0:
            raise Stop

    failed = ActGuideTrainer(
        ActGuideConfig(**ACTGUIDE, log_with=("tensorboard",)), tmp_path / "failed", on_iteration_end=stop_after_first
    )
    with pytest.raises(Stop):
        failed.run()
    assert_trackers_ended(failed)  # a run that fails ends its trackers too, with what it logged
    assert_tracked_as_logged(tmp_path / "failed", "actguide", "iteration", ("unguided_success", "loss"))

    cut = tmp_path / "cut"
    with pytest.raises(Stop):
        ActGuideTrainer(ActGuideConfig(**ACTGUIDE), cut, on_iteration_end=stop_after_first).run()
    assert not (cut / TRACKERS_DIR).exists()
    resumed = ActGuideTrainer(ActGuideConfig(**ACTGUIDE, log_with=("tensorboard",)), cut, resume=True).run()
    later = {r["iteration"]: r["unguided_success"] for r in resumed.log if r["iteration"] >= 1}
    assert later and tensorboard_scalars(cut / TRACKERS_DIR / "actguide")["unguided_success"] == pytest.approx(later)


@pytest.mark.slow
def test_without_log_with_nothing_is_created_under_trackers(tmp_path):
    run = tmp_path / "run"
    ActGuideTrainer(ActGuideConfig(**{**ACTGUIDE, "budget": 12}), run).run()
    assert (run / "log.jsonl").is_file() and not (run / TRACKERS_DIR).exists()


def test_an_unknown_or_uninstalled_tracker_fails_clearly_before_any_training(tmp_path):
    with pytest.raises(SteerEnvsError, match=r"unknown tracker\(s\) \['tensorbored'\].*'tensorboard'"):
        SteeringConfig(**STEERING, log_with=("tensorbored",))
    with pytest.raises(SteerEnvsError, match=r"unknown tracker\(s\) \['nope'\]"):
        ActGuideConfig.from_dict({"log_with": ["nope"]})
    name = uninstalled_tracker()
    package = TRACKER_PACKAGES[name]
    config = ActGuideConfig(**ACTGUIDE, log_with=[name])  # a known name loads (a run folder's config must)

    def never(*_args):
        raise AssertionError("training started")

    for trainer in (
        ActGuideTrainer(config, tmp_path / "a", on_iteration_end=never),
        SteeringTrainer(SteeringConfig(**STEERING, log_with=name), tmp_path / "s", on_round_end=never),
    ):
        with pytest.raises(SteerEnvsError, match=rf"\['{name}'\].*pip install {package}"):
            trainer.run()
        assert not trainer.run_dir.exists()  # refused before the run folder was even created


def test_the_cli_flag_sets_log_with_and_a_bad_name_is_refused(tmp_path, capsys):
    from steer_envs.cli.main import main

    assert main(["train", "actguide", "--out", str(tmp_path / "a"), "--log-with", "tensorbored", "--no-progress"]) == 2
    assert main(["train", "steering", "--out", str(tmp_path / "s"), "--log-with", "tensorbored", "--no-progress"]) == 2
    assert "unknown tracker(s) ['tensorbored']" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "make",
    [lambda **kw: SteeringConfig(**STEERING, **kw), lambda **kw: ActGuideConfig(**ACTGUIDE, **kw)],
    ids=["steering", "actguide"],
)
def test_log_with_keeps_the_fingerprint_so_either_folder_resumes(tmp_path, make):
    plain, tracked = make(), make(log_with=("tensorboard", "wandb"))
    assert tracked.fingerprint() == plain.fingerprint()
    for first, then, name in ((plain, tracked, "made_without"), (tracked, plain, "made_with")):
        run = tmp_path / name
        assert RunFolder(run, first, marker="checkpoint.pt").prepare(resume=False) is False
        (run / "checkpoint.pt").write_bytes(b"")
        assert RunFolder(run, then, marker="checkpoint.pt").prepare(resume=True) is True
    with pytest.raises(SteerEnvsError, match=r"differs in: lr\)"):  # log_with is not named among the differences
        RunFolder(tmp_path / "made_with", make(lr=0.5, log_with=("tensorboard",)), marker="checkpoint.pt").prepare(
            resume=True
        )


def test_a_toml_config_reads_log_with(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('log_with = ["tensorboard"]\nm = 2\n')
    assert SteeringConfig.load(path).log_with == ("tensorboard",)
    path.write_text('log_with = "tensorboard,wandb"\n')
    assert ActGuideConfig.load(path).log_with == ("tensorboard", "wandb")
