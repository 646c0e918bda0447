"""``docs/results_testbed.md``: what the testbed must show before any learned method's number means anything.

Sections 1-3 (leak test, note reading, calibration) and 6 (the reader for steerers) are prose with the numbers their
commands printed (``templates/testbed_intro.md``, ``testbed_reader.md``; those commands write no run folder yet).
Section 4, the headroom table, is read from an eval run folder (``OUT/headroom_test``, made by the
``steer-envs eval`` command the section shows) through the harness
(:func:`~benchmarks.harness.runner.complete_methods`, :func:`~benchmarks.harness.stats.summarize`,
:func:`~benchmarks.harness.tables.results_table`), and its reading (oracle gain, the best fixed rule's share of it)
is computed from the same summaries. Section 5 is the sensitivity run folder's own table (``OUT/sensitivity/
sensitivity.md``, written by ``steer-envs sensitivity`` from its ``transfer.json``).
``steer-envs report results_testbed --out OUT`` rebuilds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import complete_methods, reference_of, table_header
from benchmarks.harness.stats import MethodSummary, summarize
from benchmarks.harness.tables import results_table
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT

from .builder import Page, PageContext, page_sections, template, template_section
from .ladders import headroom_overview, ladder_block, read_ladder

HEADROOM = "headroom_test"
#: the committed ladder of each shipped profile (section 7), as ``steer-envs headroom`` wrote it plus its run.json
LADDERS = REPO_ROOT / "docs" / "results" / "testbed"
LADDERS_HEADING = "## 7. The headroom ladder of every profile (test)"
PROFILES: tuple[str, ...] = ("default", "loopy", "r1searcher", "r1searcher_llama", "strong", "weak")
SENSITIVITY = "sensitivity"


def headroom_summaries(folder: RunFolder) -> list[MethodSummary]:
    """The summaries ``steer-envs eval`` puts in ``table.md`` (complete methods, paired with the reference)."""
    complete, _ = complete_methods(folder)
    if not complete:
        raise SteerEnvsError(f"{folder.root} has no complete method; finish its `steer-envs eval` command")
    return summarize(complete, list(folder.config.benchmarks), reference=reference_of(complete))


def load(out: Path) -> dict[str, Any]:
    root = out / HEADROOM
    if not (root / "config.json").is_file():
        raise SteerEnvsError(
            f"{root} is not an eval run folder: run the headroom command of docs/results_testbed.md with --out {root}"
        )
    folder = RunFolder(root)
    sensitivity = out / SENSITIVITY / "sensitivity.md"
    return {
        "folder": folder,
        "summaries": headroom_summaries(folder),
        "sensitivity": sensitivity.read_text(encoding="utf-8") if sensitivity.is_file() else None,
        "ladders": read_ladders(),
    }


def read_ladders(root: Path = LADDERS) -> dict[str, dict[str, Any]]:
    """Each shipped profile's committed ladder (``docs/results/testbed/<profile>/``), in :data:`PROFILES` order."""
    found = {p: read_ladder(root / p) for p in PROFILES}
    return {f"sim:{p}": data for p, data in found.items() if data is not None}


def ladders_markdown(ladders: dict[str, dict[str, Any]]) -> str:
    """Section 7: the method, the profiles side by side, then each profile's ladder."""
    parts = [f"{LADDERS_HEADING}\n\n", template("testbed_ladder")]
    if not ladders:
        return "".join(parts) + "*No ladder is committed under docs/results/testbed/.*\n\n"
    parts.append(headroom_overview(ladders) + "\n")
    missing = [f"`sim:{p}`" for p in PROFILES if f"sim:{p}" not in ladders]
    if missing:
        parts.append(f"Not measured at this scale yet: {', '.join(missing)}.\n\n")
    for name, data in ladders.items():
        parts += [f"### `{name}`\n\n", ladder_block(data)]
    return "".join(parts) + template("testbed_ladder_limits")


def refresh_ladders(page: str, ladders: str) -> str:
    """``page`` (the text of docs/results_testbed.md) with its section 7 replaced by ``ladders`` (what
    :func:`ladders_markdown` renders from the committed ladders): ``python -m benchmarks.pages.testbed --ladders``.

    Why in place: sections 4 and 5 read run folders that are not committed, so the whole page is rebuilt only where
    they are (``steer-envs report results_testbed --out RUNS``); section 7 reads committed ladders alone, so a
    remeasured ladder reaches the page without those runs, and a test holds the section equal to its render."""
    following = template("testbed_weak").splitlines()[0]
    start = page.find(LADDERS_HEADING)
    end = page.find(following, start) if start >= 0 else -1
    if end < 0:
        raise SteerEnvsError(f"the page has no section {LADDERS_HEADING!r} followed by {following!r}")
    return page[:start] + ladders + page[end:]


def _ladders(ctx: PageContext) -> str:
    return ladders_markdown(ctx.data["ladders"])


def _by_method(summaries: list[MethodSummary], name: str) -> MethodSummary | None:
    return next((s for s in summaries if s.method.split(":", 1)[0] == name and s.avg_gain is not None), None)


def headroom_reading(summaries: list[MethodSummary]) -> str:
    """The section's verdict from its own numbers: oracle − none, and the best fixed rule's share of it."""
    oracle, rule = _by_method(summaries, "oracle"), _by_method(summaries, "best_fixed_rule")
    if oracle is None:
        return "No oracle row in the run folder: the headroom bound cannot be read.\n\n"
    g = oracle.avg_gain
    text = f"Oracle − none = {g.mean:+.1f} [{g.low:+.1f}, {g.high:+.1f}] ({'met' if g.mean >= 15 else 'not met'}: ≥ 15)"
    if rule is not None and g.mean > 0:
        share = rule.avg_gain.mean / g.mean
        text += (
            f"; the best fixed rule gains {share:.0%} of what the oracle gains "
            f"({'met' if share <= 1 / 3 else 'not met'}: ≤ 33%)"
        )
    return text + ".\n\n"


def _headroom(ctx: PageContext) -> str:
    folder, summaries = ctx.data["folder"], ctx.data["summaries"]
    return (
        f"## 4. Headroom ({folder.config.split})\n\n"
        + template("testbed_headroom_command")
        + table_header(folder.config)
        + results_table(summaries, list(folder.config.benchmarks))
        + "\n"
        + headroom_reading(summaries)
        + template("testbed_headroom_reading")
    )


def _sensitivity(ctx: PageContext) -> str:
    body = ctx.data["sensitivity"] or "*Not run yet in this folder of runs.*\n"
    return "## 5. Sensitivity to the response assumptions\n\n" + template("testbed_sensitivity_command") + body + "\n"


PAGE = Page(
    name="results_testbed",
    help="the testbed's own checks: leak test, note reading, calibration, headroom, sensitivity",
    doc="docs/results_testbed.md",
    out="runs",
    load=load,
    sections=page_sections(
        template_section("intro", "testbed_intro"),
        _headroom,
        _sensitivity,
        template_section("reader", "testbed_reader"),
        _ladders,
        template_section("weak", "testbed_weak"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from steer_envs.atomic import atomic_write_text

    parser = argparse.ArgumentParser(prog="python -m benchmarks.pages.testbed", description=refresh_ladders.__doc__)
    parser.add_argument("--ladders", action="store_true", required=True, help="refresh section 7 from the ladders")
    parser.parse_args(argv)
    doc = REPO_ROOT / PAGE.doc
    atomic_write_text(doc, refresh_ladders(doc.read_text(encoding="utf-8"), ladders_markdown(read_ladders())))
    print(f"wrote section 7 of {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
