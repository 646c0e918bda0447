"""BENCHMARKS.md is rendered from one perf-suite run's record alone: every section from its figures, or with a line
saying why it was not measured and the command that measures it. Checked on a small synthetic record
(:mod:`tests.benchmarks.perf_run`), so a renderer change is tested without running a benchmark."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from perf import suite
from perf.gpu_section import read_gpu_record
from perf.page import SuiteRun, render_page
from perf.sections import SECTIONS, suite_files
from tests.benchmarks import perf_run
from tests.test_docs_vocabulary import HISTORY_DOCS, ISSUE_REFERENCE, OUTSIDE_DOCUMENTS

ROOT = Path(__file__).resolve().parents[2]


def render(record: dict) -> str:
    return render_page(SuiteRun.from_json(record), SECTIONS)


def without(record: dict, *files: str) -> dict:
    """The record without the benchmarks of ``files`` and their passed outcomes (their tests recorded nothing)."""
    kept = [b for b in record["benchmarks"] if b["fullname"].split("::")[0] not in files]
    outcomes = {
        k: v for k, v in record["outcomes"].items() if k.split("::")[0] not in files or v["outcome"] != "passed"
    }
    return {**record, "benchmarks": kept, "outcomes": outcomes}


def section_text(page: str, title: str) -> str:
    return page.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_section_renders_its_rows_and_its_command_from_the_run():
    page = render(perf_run.record())
    for section in SECTIONS:
        text = section_text(page, section.title)
        assert text.startswith(f"\n`{section.command()}`: "), section.title
        assert "\n| " in text and "Not measured" not in text, section.title
    # figures of the record, as the sections print them
    for figure in ("| off | 1,577 | 0.634 | 69 %", "| turn 20 | 1,277 | 33,649 |", "| 4.68× |", "0.85×", "1.92×"):
        assert figure in page
    for figure in ("| 256 | 261.1 | 102 % |", "| 1,568 | 14.2 s |", "| 1.3e-06 |", "| 1.06× | 0 |", "| 0.41 | 5 |"):
        assert figure in page
    assert "Eval path ÷ plain async client (aiohttp): 122 % steady (116 % whole run)" in page
    # the pools side by side, the cold starts against their bars
    assert "eval at fixed 100 ms: 1.21 ms on greenlets, 2.42 on threads (2.00×)" in page
    assert "the async pool ≥ 80 % of 256 / latency (met: 83 %)" in page
    assert "| first step of SearchSteering-v0 with a text note | warm | 3.47 |" in page
    assert "(warm cache) within 10 s of CPU (not met in this run: 11.50 s)" in page
    assert "vLLM 0.32.0 in eager mode (no graph compilation: the quick scale) serving a tiny random model" in page


def test_workload_sizes_targets_and_limits_come_from_the_run():
    record = perf_run.record()
    for bench in record["benchmarks"]:
        if bench["name"] == "test_good_clients_hold_under_hostile_load":
            bench["extra_info"]["config"]["header_slowloris"] = 77
            bench["extra_info"]["limits"]["max_depth"] = 41
            bench["extra_info"]["p99_ratio_limit"] = 2.5
            bench["extra_info"]["decode_s"] = 0.987
        if bench["name"] == "test_read_an_unseen_note_warm":
            bench["extra_info"]["target_ms"] = 2.0
    page = render(record)
    for text in ("77 header slowloris", "the 41-level limit", "within 2.5× unloaded", "took 0.99 s to decode"):
        assert text in page
    assert "a new note under 2 ms (not met in this run: 3.10 ms)" in page


def test_targets_say_whether_the_run_met_them():
    page = render(perf_run.record())
    assert "fast path ≥ 4× (not met in this run: 1.27×); slow path ≥ 3× (met: 5.32×)" in page
    assert "≥ 80 % of N / latency at N = 64 from one process (not met in this run: 56 %)" in page
    assert "(p99 under attack within 3× unloaded, no good request refused): met on every server" in page


def test_a_skipped_benchmark_says_why_and_the_command_that_measures_it():
    skip = "vLLM is not installed (its CPU build goes under /cache/vllm); install it with `steer-envs vllm install`"
    node = f"{perf_run.ENGINE}::test_eval_path_against_vllm_vs_async_replay"
    record = without(perf_run.record({node: {"outcome": "skipped", "reason": skip}}), perf_run.ENGINE)
    engine = next(s for s in SECTIONS if s.file == perf_run.ENGINE)
    text = section_text(render(record), engine.title)
    assert "| " not in text
    assert (
        f"*Not measured in this run: skipped: {skip} "
        "(`python -m pytest perf/test_perf_engine.py --benchmark-enable -q`).*"
    ) in text


def test_a_file_skipped_at_import_and_a_file_left_out_say_so():
    outcomes = {perf_run.HOSTILE: {"outcome": "skipped", "reason": "could not import 'openenv'"}}
    page = render(without(perf_run.record(outcomes), perf_run.HOSTILE, perf_run.CLI))
    assert "*Not measured in this run: skipped: could not import 'openenv' (`python -m pytest" in page
    assert "*Not measured in this run: perf/test_perf_cli.py was not part of this run (`" in page


def test_deselected_tests_and_failed_checks_are_named():
    node = f"{perf_run.ENV}::test_fork_cost_does_not_grow_with_the_transcript"
    deselected = {
        f"{perf_run.NOTES}::{name}": {"outcome": "deselected", "reason": "left out by -k"}
        for name in (
            "test_read_an_unseen_note_warm",
            "test_read_a_cached_note",
        )
    }
    record = perf_run.record({node: {"outcome": "failed", "reason": "AssertionError: 3.1 > 2"}, **deselected})
    page = render(without(record, perf_run.NOTES))
    fork = section_text(page, "`fork()` cost")
    assert "| turn 1 |" in fork  # the figures stay beside the failed check
    assert "did not pass in this run: `test_fork_cost_does_not_grow_with_the_transcript` failed: AssertionError" in fork
    assert "*Not measured in this run: deselected: left out by -k (`" in page


def test_the_header_names_date_commit_machine_load_tests_and_wall_time():
    page = render(perf_run.record())
    head = page.split("\n## ", 1)[0]
    for text in ("in 12.0 min on 2026-12-05 at commit `abc1234` (a clean tree)", "AMD EPYC, 2 cores, 23.5 GiB RAM"):
        assert text in head
    assert "before: 0.20 / 0.30 / 0.40; after: 0.50 / 0.40 / 0.40" in head and "40 passed (pytest exit code 0)" in head
    assert "shared the machine" not in head
    dirty = render(perf_run.record(commit="abc1234+dirty", commit_after="abc1234+dirty", load_after=[3.5, 2, 1]))
    assert "uncommitted changes" in dirty and "1-minute load up to 3.5 on 2 cores" in dirty
    assert "the tree changed during the run: `def5678`" in render(perf_run.record(commit_after="def5678"))


def test_a_kept_record_renders_again_the_same(tmp_path: Path):
    record = perf_run.record()
    run = SuiteRun.from_json(record)
    path, out = tmp_path / "run.json", tmp_path / "BENCHMARKS.md"
    path.write_text(json.dumps(run.to_json()), encoding="utf-8")
    assert suite.main(["--from-json", str(path), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render_page(run, SECTIONS, read_gpu_record())
    assert render_page(run, SECTIONS) == render(record)


def gpu_record() -> dict:
    return {
        "command": "python -m benchmarks.gpu_check --skip vllm",
        "commit": "abc1234",
        "date": "2026-12-06",
        "machine": "one H200, 16 CPU cores",
        "torch": "2.11.0+cu130",
        "device_name": "NVIDIA H200",
        "plan": {"G": 8},
        "steerer_0.5b": {
            "shape": {"hidden_size": 896},
            "fast_path_batching_speedup": 7.7,
            "training": {"iterations_per_min": 2.12},
        },
        "steerer_8b": {"error": "SteerEnvsError: a missing piece\nsecond line", "traceback": "..."},
        "vector": {"requests_per_s": 194.7},
    }


def test_the_kept_gpu_check_is_the_last_section_dated_on_its_own_with_every_figure_and_every_failure():
    page = render_page(SuiteRun.from_json(perf_run.record()), SECTIONS, gpu_record())
    assert "but the last section's, the GPU check, kept from its own run" in page.split("\n## ", 1)[0]
    gpu = section_text(page, "GPU check (its own run)")
    assert "`python -m benchmarks.gpu_check --skip vllm` on 2026-12-06 at commit `abc1234`: one H200" in gpu
    for row in (
        "| steerer_0.5b | fast_path_batching_speedup | 7.7 |",
        "| steerer_0.5b | training.iterations_per_min | 2.12 |",
        "| vector | requests_per_s | 194.7 |",
    ):
        assert row in gpu
    assert "hidden_size" not in gpu and "| G |" not in gpu  # the shape and the plan describe, they are not figures
    assert "Not measured in this run: `steerer_8b`: SteerEnvsError: a missing piece." in gpu
    assert page.rstrip().endswith(gpu.rstrip())
    assert "GPU check" not in render_page(SuiteRun.from_json(perf_run.record()), SECTIONS)


def test_the_rendered_page_passes_the_vocabulary_checks():
    for line in render(perf_run.record()).splitlines():
        for pattern in (HISTORY_DOCS, ISSUE_REFERENCE, OUTSIDE_DOCUMENTS):
            assert not pattern.search(line), line


#: words with digits in them that are names, not figures
_NAMES = re.compile(r"`[^`]*`|\b[A-Za-z][\w-]*\d\w*\b")


@pytest.mark.parametrize("section", SECTIONS, ids=[s.title for s in SECTIONS])
def test_a_sections_own_prose_has_no_figures(section):
    """Titles and workload descriptions carry no numbers: sizes, targets and limits come from the run."""
    assert not re.search(r"\d", _NAMES.sub("", section.title + " " + section.about)), section.title


def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_perf_benchmark_file_and_test_feeds_a_section():
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "perf").glob("test_perf_*.py"))
    assert sorted(suite_files()) == files
    for file in files:
        reported = {test for section in SECTIONS if section.file == file for test in section.tests}
        assert _test_functions(ROOT / file) == reported, file


def test_the_committed_page_is_the_render_of_its_committed_records():
    # the page rebuilds from the repository alone (`python -m perf.suite --from-json SUITE_RECORD`)
    record = json.loads(suite.SUITE_RECORD.read_text(encoding="utf-8"))
    page = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert page == render_page(SuiteRun.from_json(record), SECTIONS, read_gpu_record())
    assert all("data" not in b["stats"] for b in record["benchmarks"])  # raw rounds are not kept
