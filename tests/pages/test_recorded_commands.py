"""Every committed summary records the command that measured it, and a page prints it for a reader to rerun: each
such command must still parse with today's command line (a renamed flag is migrated in the summaries, not left
to fail in a reader's shell). Fast: parses, runs nothing."""

from __future__ import annotations

import argparse
import json
import shlex

import pytest

from steer_envs.paths import REPO_ROOT

SUMMARIES = sorted(
    path
    for path in [
        *REPO_ROOT.glob("docs/results/*/*/summary.json"),
        *REPO_ROOT.glob("studies/*/results/*/*/summary.json"),
    ]
    if isinstance(json.loads(path.read_text(encoding="utf-8")).get("command"), str)
)


#: the studies whose recorded commands a committed summary holds (each module has ``build_parser``)
STUDY_COMMANDS = (
    "studies.drift_tells.run",
    "studies.drift_components.run",
    "studies.drift_supervised.run",
    "studies.drift_rl_ngrams.run",
)


def _parser(argv: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    if argv[:3] == ["python", "-m", "benchmarks.harness.results_doc"]:
        from benchmarks.harness.results_doc import build_parser

        return build_parser(), argv[3:]
    if argv[:2] == ["steer-envs", "compare"]:
        from benchmarks.cli import _configure_compare

        parser = argparse.ArgumentParser()
        _configure_compare(parser)
        return parser, argv[2:]
    if argv[:2] == ["python", "-m"] and argv[2] in STUDY_COMMANDS:
        import importlib

        return importlib.import_module(argv[2]).build_parser(), argv[3:]
    raise AssertionError(f"a recorded command this test does not know: {argv[:3]}")


def test_there_are_recorded_commands():
    assert len(SUMMARIES) >= 6


@pytest.mark.parametrize("path", SUMMARIES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_a_recorded_command_parses_with_todays_command_line(path):
    parser, rest = _parser(shlex.split(json.loads(path.read_text(encoding="utf-8"))["command"]))
    parser.exit_on_error = False
    parser.parse_args(rest)  # argparse raises on an unknown or removed flag
