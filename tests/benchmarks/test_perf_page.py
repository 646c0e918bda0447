"""Regenerating BENCHMARKS.md keeps the sections the perf suite does not measure (the real engine, the servers
under attack): they carry their own command, and a regeneration must not lose figures nobody reran."""

from __future__ import annotations

from pathlib import Path

from benchmarks.perf.suite import SEPARATE_MARK, separately_measured_sections

PAGE = """# Performance of steer-envs

## Env step

figures of this run

## Real engine

{mark} (the suite does not start vLLM): `pytest benchmarks/perf/test_perf_engine.py`

| a | b |

## In flight

{mark}, an older hand-measured copy of a section the suite now writes
"""


def test_separately_measured_sections_are_kept_and_suite_sections_are_not(tmp_path: Path):
    page = tmp_path / "BENCHMARKS.md"
    page.write_text(PAGE.format(mark=SEPARATE_MARK), encoding="utf-8")
    rendered = "# Performance of steer-envs\n\n## Env step\n\nnew figures\n\n## In flight\n\nnew rows\n"
    kept = separately_measured_sections(page, rendered)
    assert [k.splitlines()[0] for k in kept] == ["## Real engine"]
    assert kept[0].endswith("| a | b |")


def test_no_page_yet_keeps_nothing(tmp_path: Path):
    assert separately_measured_sections(tmp_path / "missing.md", "") == []


def test_the_shipped_page_marks_the_sections_the_suite_does_not_write():
    page = Path(__file__).resolve().parents[2] / "BENCHMARKS.md"
    titles = [k.splitlines()[0] for k in separately_measured_sections(page, "")]
    assert any("real engine" in t for t in titles) and any("hostile load" in t for t in titles)
    assert any("LoRA adapter" in t for t in titles)
