"""``BENCHMARKS.md`` from one perf-suite run: the run's record (:class:`SuiteRun`, what ``python -m
perf.suite --json FILE`` keeps), the page's header, and one section per entry of
:data:`perf.sections.SECTIONS`.

Why a record apart from the run: the page is a function of it alone (no figure typed by hand, none kept from an
earlier page), so the renderer is tested on a small synthetic record, and a saved run renders again without
rerunning (``--from-json``). A section whose tests recorded nothing says so, with the reason its tests gave (a
skip, a failure, ``-k``) and the command that measures it alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .gpu_section import gpu_section_lines
from .outcomes import Outcome

#: the title of the page (its first line)
TITLE = "# Performance of steer-envs"


@dataclass(frozen=True)
class Machine:
    """What the run ran on; ``versions``: the libraries whose speed the figures depend on."""

    cpu: str
    cores: int
    memory_gib: float
    os: str
    python: str
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunContext:
    """The run around the figures. ``commit`` and ``commit_after``: :func:`~benchmarks.harness.provenance.code_version`
    when the run started and ended (``+dirty``: uncommitted changes); ``optional``: each optional piece's state."""

    command: str
    scale: str
    date: str
    commit: str
    commit_after: str
    machine: Machine
    load_before: tuple[float, ...]
    load_after: tuple[float, ...]
    wall_s: float
    pytest_exit: int
    optional: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunContext:
        fields = dict(data)
        fields["machine"] = Machine(**fields["machine"])
        fields["load_before"], fields["load_after"] = tuple(fields["load_before"]), tuple(fields["load_after"])
        return cls(**fields)


def _without_raw_timings(benchmark: Mapping[str, Any]) -> dict[str, Any]:
    """A benchmark's entry without pytest-benchmark's per-round timings (``stats.data``): the page renders the
    summary statistics only, and the raw rounds would make the committed record megabytes."""
    stats = {k: v for k, v in benchmark.get("stats", {}).items() if k != "data"}
    return {**benchmark, "stats": stats}


@dataclass(frozen=True)
class SuiteRun:
    """One run: its context, pytest-benchmark's entries (by node id) and every test's outcome (by node id; a file
    skipped at import is keyed by its path)."""

    context: RunContext
    benchmarks: dict[str, dict[str, Any]]
    outcomes: dict[str, Outcome]

    @classmethod
    def from_parts(cls, context: RunContext, benchmark_json: Mapping[str, Any], outcomes: Mapping[str, Any]):
        benchmarks = {b["fullname"]: _without_raw_timings(b) for b in benchmark_json.get("benchmarks", [])}
        return cls(context, benchmarks, {k: Outcome(**v) for k, v in outcomes.items()})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SuiteRun:
        return cls.from_parts(RunContext.from_dict(data["context"]), data, data.get("outcomes", {}))

    def to_json(self) -> dict[str, Any]:
        return {
            "context": asdict(self.context),
            "benchmarks": list(self.benchmarks.values()),
            "outcomes": {k: asdict(v) for k, v in self.outcomes.items()},
        }

    def figures(self, file: str) -> Figures:
        prefix = file + "::"
        return Figures({k[len(prefix) :]: v for k, v in self.benchmarks.items() if k.startswith(prefix)})

    def outcomes_of(self, file: str, tests: Iterable[str]) -> dict[str, Outcome]:
        """The outcomes of ``tests`` (function names) of ``file``, by test name with its parameters."""
        prefix, wanted = file + "::", set(tests)
        return {
            k[len(prefix) :]: v
            for k, v in self.outcomes.items()
            if k.startswith(prefix) and k[len(prefix) :].split("[")[0] in wanted
        }


@dataclass(frozen=True)
class Figures:
    """The benchmarks one perf file recorded in a run, by test name with its parameters (``test_fork_cost[1]``)."""

    by_name: Mapping[str, dict[str, Any]]

    def extra(self, name: str) -> dict[str, Any]:
        """The benchmark's ``extra_info`` ({} when it did not run)."""
        return self.by_name.get(name, {}).get("extra_info", {})

    def stats(self, name: str) -> dict[str, Any]:
        return self.by_name.get(name, {}).get("stats", {})

    def names(self, test: str) -> list[str]:
        """Every parametrisation of ``test`` that ran, in run order (``test_fork_cost[1]``, ...)."""
        return [name for name in self.by_name if name.split("[")[0] == test]

    def named(self, test: str) -> list[dict[str, Any]]:
        """The ``extra_info`` of every parametrisation of ``test`` that ran, in run order."""
        return [self.extra(name) for name in self.names(test)]


@dataclass(frozen=True)
class Body:
    """A section's table rows and the notes under it (each a paragraph)."""

    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Section:
    """One section of the page. ``tests``: the test functions of ``file`` whose outcomes it reports; ``select``: the
    ``-k`` expression that runs them alone; ``about``: the workload in words (numbers come from the run, in the
    body's notes); ``body``: the rows and notes, from the file's figures."""

    title: str
    file: str
    tests: tuple[str, ...]
    about: str
    header: tuple[str, ...]
    body: Callable[[Figures, RunContext], Body]
    select: str = ""

    def command(self, scale: str = "quick") -> str:
        """The command that measures this section alone, at the run's workload scale."""
        from .perf_scale import SCALE_ENV

        prefix = f"{SCALE_ENV}=full " if scale == "full" else ""
        select = f" -k '{self.select}'" if self.select else ""
        return f"{prefix}python -m pytest {self.file}{select} --benchmark-enable -q"


# -- numbers -------------------------------------------------------------------------------------------------------
def num(value: Any, digits: int = 0) -> str:
    """``1,234.5``; a dash for a figure the run did not give."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}"


def pct(share: Any, digits: int = 0) -> str:
    return "–" if share is None else f"{100 * share:.{digits}f} %"


def times(ratio: Any) -> str:
    return "–" if ratio is None else f"{ratio:.2f}×"


def met(ok: bool) -> str:
    return "met" if ok else "not met in this run"


# -- the page ------------------------------------------------------------------------------------------------------
def _loads(values: Iterable[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def _tally(outcomes: Mapping[str, Outcome]) -> str:
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no tests"


def _provenance(c: RunContext) -> str:
    """The commit line: clean, uncommitted changes, or changed while the run ran."""
    if c.commit != c.commit_after:
        return f"at commit `{c.commit}` (the tree changed during the run: `{c.commit_after}` at its end)"
    if c.commit.endswith("+dirty"):
        return f"at commit `{c.commit}` (uncommitted changes: these figures do not belong to the commit alone)"
    return f"at commit `{c.commit}` (a clean tree)"


def header_lines(run: SuiteRun, gpu_section: bool = False) -> list[str]:
    c, m = run.context, run.context.machine
    peak = max(c.load_before[0], c.load_after[0])
    lines = [
        TITLE,
        "",
        f"Generated by `{c.command}` ({c.scale} workloads) in {c.wall_s / 60:.1f} min on {c.date} "
        f"{_provenance(c)}. Every figure below comes from this one run"
        + (" (but the last section's, the GPU check, kept from its own run on a GPU machine)" if gpu_section else "")
        + "; ratios are measured side by side in it. Each section names the command that measures it alone.",
        "",
        f"**Machine**: {m.cpu}, {m.cores} cores, {m.memory_gib} GiB RAM, {m.os}, Python {m.python}; "
        + ", ".join(f"{k} {v}" for k, v in m.versions.items())
        + ".",
        f"**Load average** (1/5/15 min) before: {_loads(c.load_before)}; after: {_loads(c.load_after)}. Speed-ups "
        "from more workers need idle cores: with a load above the core count, read them as lower bounds.",
        f"**Tests**: {_tally(run.outcomes)} (pytest exit code {c.pytest_exit}).",
    ]
    if c.optional:
        lines.append("**Optional pieces**: " + "; ".join(f"{k}: {v}" for k, v in c.optional.items()) + ".")
    if peak > 0.5 * (m.cores or 1):
        lines += [
            "",
            f"**This run shared the machine with other work (1-minute load up to {peak:.1f} on {m.cores} cores): "
            "the worker speed-ups are not meaningful here. Regenerate on a quiet machine.**",
        ]
    return [*lines, ""]


def _why_not_measured(run: SuiteRun, section: Section) -> str:
    """Why a section has no rows: its tests' skip reasons, failures or ``-k``; or that none of them ran."""
    outcomes = run.outcomes_of(section.file, section.tests)
    reasons = sorted({f"{o.outcome}: {o.reason}" if o.reason else o.outcome for o in outcomes.values()})
    if not outcomes:
        whole = run.outcomes.get(section.file)
        reasons = [f"{whole.outcome}: {whole.reason}"] if whole else [f"{section.file} was not part of this run"]
    elif all(o.outcome == "passed" for o in outcomes.values()):
        reasons = ["its tests passed without recording figures (benchmarks disabled?)"]
    return "; ".join(reasons)


def _unmet(run: SuiteRun, section: Section) -> list[str]:
    """One line per test of the section that did not pass (a section with rows can still miss some)."""
    outcomes = run.outcomes_of(section.file, section.tests)
    return [
        f"`{name}` {o.outcome}" + (f": {o.reason}" if o.reason else "")
        for name, o in outcomes.items()
        if o.outcome != "passed"
    ]


def _numeric(cells: Iterable[str]) -> bool:
    """A column of figures (right-aligned): every cell starts with a digit or is a dash."""
    return all(cell[:1].isdigit() or cell == "–" for cell in cells)


def table(header: Iterable[str], rows: list[list[str]]) -> list[str]:
    header = list(header)
    aligns = [" ---: " if i and _numeric(row[i] for row in rows) else " --- " for i in range(len(header))]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(aligns) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def section_lines(run: SuiteRun, section: Section) -> list[str]:
    command = section.command(run.context.scale)
    body = section.body(run.figures(section.file), run.context)
    lines = [f"## {section.title}", "", f"`{command}`: {section.about}", ""]
    if body.rows:
        lines += table(section.header, body.rows)
        for note in body.notes:
            lines += ["", note]
    else:
        lines.append(f"*Not measured in this run: {_why_not_measured(run, section)} (`{command}`).*")
    unmet = _unmet(run, section)
    if unmet and body.rows:
        lines += ["", "Tests of this section that did not pass in this run: " + "; ".join(unmet) + "."]
    return [*lines, ""]


def render_page(run: SuiteRun, sections: Iterable[Section], gpu: Mapping[str, Any] | None = None) -> str:
    """The whole page: the header, then ``sections`` (:data:`perf.sections.SECTIONS`) in order, then the
    kept GPU check's record (:mod:`perf.gpu_section`) when there is one."""
    lines = header_lines(run, gpu_section=gpu is not None)
    for section in sections:
        lines += section_lines(run, section)
    if gpu is not None:
        lines += gpu_section_lines(gpu)
    return "\n".join(lines).rstrip("\n") + "\n"
