"""A pytest plugin the perf suite loads (``-p perf.outcomes``): every test's outcome, with the reason of a
skip and the message of a failure, written as JSON to ``$STEER_ENVS_BENCH_OUTCOMES`` when the session ends.

Why: pytest-benchmark's JSON holds the benchmarks that ran and nothing about the ones that did not. A section of
``BENCHMARKS.md`` without figures must say why (a missing extra, a failed check, a test left out by ``-k``), so
the page is rendered from both files of one run.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

OUTCOMES_ENV = "STEER_ENVS_BENCH_OUTCOMES"
#: the longest failure message kept (the page quotes it on one line)
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class Outcome:
    """``outcome``: passed, failed, skipped or deselected; ``reason``: a skip's reason or a failure's message."""

    outcome: str
    reason: str = ""


_OUTCOMES: dict[str, Outcome] = {}


def _reason(report: Any) -> str:
    """A skip's reason (pytest keeps it as ``(path, line, 'Skipped: why')``) or the failure's first line."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr or "")
    return " ".join(text.split())[:MESSAGE_CHARS]


def _keep(nodeid: str, outcome: str, reason: str = "") -> None:
    # a test's worst phase wins: a failed teardown after a passed call is a failure
    if _OUTCOMES.get(nodeid, Outcome("passed")).outcome in ("failed", "skipped") and outcome == "passed":
        return
    _OUTCOMES[nodeid] = Outcome(outcome, reason)


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call" or report.outcome != "passed":
        _keep(report.nodeid, report.outcome, "" if report.outcome == "passed" else _reason(report))


def pytest_collectreport(report: Any) -> None:
    """A whole file skipped or broken at import (``pytest.importorskip`` at module level): kept under its path."""
    if report.outcome != "passed":
        _keep(report.nodeid, report.outcome, _reason(report))


def pytest_deselected(items: list[Any]) -> None:
    for item in items:
        _keep(item.nodeid, "deselected", "left out by -k")


def pytest_sessionfinish(session: Any) -> None:
    path = os.environ.get(OUTCOMES_ENV)
    if path:
        Path(path).write_text(json.dumps({k: asdict(v) for k, v in _OUTCOMES.items()}, indent=1), encoding="utf-8")
