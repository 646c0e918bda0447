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
    for section in ("## Setting card", "## Acceptance", "## The barrier: out-region test tasks", "## Main result",
                    "## Ablations", "## Noisy guidance", "## Budget curve", "## Barrier diagnostics", "## Probes by fork"):
        assert section in page, section
    assert (doc.parent / "results" / "actguide_barrier.png").is_file()
    assert (doc.parent / "results" / "actguide_budget.png").is_file()
    trained = json.loads((out / "train_times.json").read_text())
    episodes = {p.name: p.stat().st_size for p in (out / "episodes").iterdir()}
    assert main(argv) == 0
    assert json.loads((out / "train_times.json").read_text()) == trained  # nothing trained again
    assert {p.name: p.stat().st_size for p in (out / "episodes").iterdir()} == episodes  # nothing played again
