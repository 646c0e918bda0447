"""The ACTGUIDE results page regenerates end to end from its one command (a small dry run), and a rerun reads every
training run and episode back instead of repeating them."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.actguide_doc import main


@pytest.mark.slow
def test_quick_regeneration_writes_every_section_and_resumes(actguide_quick_run):
    out, doc, argv = actguide_quick_run  # made by ``main(["--quick", "--out", out, "--doc", doc])`` (tests/conftest.py)
    page = doc.read_text()
    for section in (
        "## Setting card",
        "## Acceptance",
        "## The barrier: out-region test tasks",
        "## Main result",
        "## Ablations",
        "## Noisy guidance",
        "## Budget curve",
        "## Barrier diagnostics",
        "## Probes by fork",
    ):
        assert section in page, section
    assert (doc.parent / "results" / "actguide_barrier.png").is_file()
    assert (doc.parent / "results" / "actguide_budget.png").is_file()
    trained = json.loads((out / "train_times.json").read_text())
    episodes = {p.name: p.stat().st_size for p in (out / "episodes").iterdir()}
    assert main(argv) == 0
    assert json.loads((out / "train_times.json").read_text()) == trained  # nothing trained again
    assert {p.name: p.stat().st_size for p in (out / "episodes").iterdir()} == episodes  # nothing played again


def _train_in_child(config: str, run: str, queue, barrier) -> None:
    from pathlib import Path

    from benchmarks.harness.actguide_doc import train_once

    timings: dict = {}
    barrier.wait(timeout=120)  # both reach the folder together (the race the lock is for)
    command = train_once(
        ["train", "actguide", "--config", config, "--variant", "zero_rl", "--seed", "0", "--out", run, "--no-progress"],
        Path(run),
        timings,
    )
    queue.put(timings.get(command, 0.0))


def test_two_processes_on_one_run_folder_train_it_once(tmp_path):
    """A killed pipeline's worker and its rerun may reach the same run folder at once: the lock makes the second wait
    and then find the run finished (without it both train, and one refuses the other's checkpoint or overwrites it)."""
    import multiprocessing

    from agents.actguide.config import ActGuideConfig

    config = tmp_path / "setting.json"
    config.write_text(
        json.dumps(
            ActGuideConfig(
                benchmarks=["nq"], tasks_per_benchmark=3, budget=60, batch_tasks=2, group_size=3, max_turns=3
            ).to_dict()
        )
    )
    context = multiprocessing.get_context("spawn")
    queue, barrier = context.Queue(), context.Barrier(2)
    children = [
        context.Process(target=_train_in_child, args=(str(config), str(tmp_path / "run"), queue, barrier))
        for _ in range(2)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=300)
    assert [child.exitcode for child in children] == [0, 0]
    seconds = sorted(queue.get(timeout=5) for _ in children)
    assert seconds[0] == 0.0 and seconds[1] > 0.0  # one trained, the other found it finished
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").open()]
    assert [row["iteration"] for row in log] == list(range(len(log)))  # one run's log, not two interleaved
