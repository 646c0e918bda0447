"""The README's headline tables quote the results pages, never retype them.

Every figure in a row's suite columns (a number written with a sign or decimals, and every bracketed interval) must
appear, as written, in the section of the page that the row's link points at: the link's file, and the section
under the heading whose GitHub-style anchor is the link's fragment (down to the next heading of the same or a higher
level). A figure changed in the README or on the page, or a link whose anchor no longer names a heading, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.pages import headline, summary_freshness

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
HEADLINE = "## Headline: the papers' claims and the suite's figures"
#: the columns whose figures are the suite's (the paper's column quotes the paper, not a page)
SUITE_COLUMNS = ("the suite [95% CI]", "rate")
LINK = re.compile(r"\[[^\]]*\]\(([^)#\s]+)#([^)\s]+)\)")
INTERVAL = re.compile(r"\[[^\]]*\]")
#: a figure with its interval, quoted as one string ("+5.3 [+2.4, +8.5]")
WITH_INTERVAL = re.compile(r"(?<![\w.])[+\-−]?\d+(?:\.\d+)?%? \[[^\]]*\]")
#: a number with a sign or decimals (plain integers such as seed or task counts are words here)
FIGURE = re.compile(r"(?<![\w.])[+\-−]?\d+\.\d+%?|(?<![\w.])[+\-−]\d+(?:\.\d+)?%?")
CODE_SPAN = re.compile(r"`[^`]*`")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: inline markup dropped, lower case, punctuation removed, spaces -> '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def sections(markdown: str) -> dict[str, str]:
    """Anchor -> the text of that heading's section (to the next heading of the same or a higher level); headings
    inside fenced code blocks are not headings, and a repeated slug gets GitHub's ``-1``, ``-2`` suffixes."""
    lines = markdown.splitlines()
    headings: list[tuple[int, int, str]] = []  # (line index, level, slug)
    seen: dict[str, int] = {}
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            slug = github_slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            headings.append((i, len(match.group(1)), slug if count == 0 else f"{slug}-{count}"))
    found = {}
    for n, (start, level, slug) in enumerate(headings):
        end = next((i for i, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
        found[slug] = "\n".join(lines[start:end])
    return found


def table_rows(section: str) -> list[dict[str, str]]:
    """Every row of every Markdown table in ``section``, as {header: cell}."""
    rows, header = [], None
    for line in section.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(set(c) <= set("-: ") for c in cells):
            rows.append(dict(zip(header, cells)))
    return rows


def figures(cell: str) -> list[str]:
    """The figures of a cell: each estimate with its interval as one string, then any interval and any signed or
    decimal number left (code spans, such as profile names, are names, not figures)."""
    text = CODE_SPAN.sub(" ", cell)
    pairs = WITH_INTERVAL.findall(text)
    text = WITH_INTERVAL.sub(" ", text)
    return pairs + INTERVAL.findall(text) + FIGURE.findall(INTERVAL.sub(" ", text))


def headline_rows() -> list[dict[str, str]]:
    text = README.read_text(encoding="utf-8")
    assert HEADLINE in text, "the README has no headline section"
    section = text.split(HEADLINE, 1)[1].split("\n## ", 1)[0]
    return [row for row in table_rows(section) if any(column in row for column in SUITE_COLUMNS)]


def every_declared_row() -> list[dict[str, str]]:
    """The table rows of the headline rendered as if every summary were current: what the README shows once each
    row's summary is remeasured (each must already be on its page)."""
    region = headline.render(check=lambda source: summary_freshness.Freshness(source, ("abc1234",), True, (), ""))
    return [row for row in table_rows(region) if any(column in row for column in SUITE_COLUMNS)]


def quoted(row: dict[str, str]) -> list[str]:
    return [f for column in SUITE_COLUMNS for f in figures(row.get(column, ""))]


def missing_figures(row: dict[str, str]) -> list[str]:
    """The row's suite figures that no linked section holds (each figure may come from any of the row's links)."""
    texts = []
    for path, anchor in LINK.findall(row["where"]):
        page = (README.parent / path).resolve()
        assert page.is_file(), f"{path} (linked from the headline row {row[next(iter(row))]!r}) does not exist"
        found = sections(page.read_text(encoding="utf-8"))
        assert anchor in found, f"{path} has no heading with the anchor #{anchor}"
        texts.append(found[anchor])
    return [f for f in quoted(row) if not any(f in text for text in texts)]


def test_slugs_follow_github():
    assert github_slug("2. ACTGUIDE-RL against zero RL") == "2-actguide-rl-against-zero-rl"
    assert github_slug("Current: rate-matched comparison on `sim:default` (test subset)") == (
        "current-rate-matched-comparison-on-simdefault-test-subset"
    )
    assert github_slug("Test: guidance for 0.5 of the budget") == "test-guidance-for-05-of-the-budget"
    assert github_slug("τ sweep of the RL-trained steerer") == "τ-sweep-of-the-rl-trained-steerer"


def test_figures_are_intervals_and_signed_or_decimal_numbers():
    cell = "+4.78 [+1.51, +8.29] at 8.85 agent turns, 3 seeds on `sim:drift2`; -0.03; 26.6% (2.44/task); [0.1, 0.2]"
    assert figures(cell) == ["+4.78 [+1.51, +8.29]", "[0.1, 0.2]", "8.85", "-0.03", "26.6%", "2.44"]


def test_sections_skip_fenced_code_and_end_at_the_same_level():
    page = "# T\n## A\nx 1.5\n```bash\n# not a heading\n```\n### A.1\ny\n## B\nz 2.5\n"
    found = sections(page)
    assert set(found) == {"t", "a", "a1", "b"}
    assert "1.5" in found["a"] and "y" in found["a"] and "2.5" not in found["a"]


def test_the_headline_tables_have_their_rows():
    rows, declared = headline_rows(), every_declared_row()
    h = headline.headline()
    assert len(declared) == len(h.claims) + len(h.measures) >= 12
    for row in declared:
        assert quoted(row), f"a declared row quotes no figure: {row}"
        assert LINK.search(row["where"]), f"a row with figures links no page section: {row}"
    # the README quotes some of them; the others are listed, without figures, as waiting for a remeasurement
    text = README.read_text(encoding="utf-8")
    region = text[text.index(headline.START) : text.index(headline.END)]
    waiting = [line for line in region.splitlines() if line.startswith("- ")]
    assert len(rows) + len(waiting) == len(declared)
    assert all(not figures(re.sub(r"\[[^\]]*\]\([^)]*\)", " ", line)) for line in waiting), waiting
    assert all(row in declared for row in rows)


def test_a_not_measured_row_links_a_section_that_says_so():
    """When the linked page gains its figures, the README's "not measured" goes stale: this fails until the row
    quotes them."""
    for row in headline_rows():
        if quoted(row):
            continue
        for path, anchor in LINK.findall(row.get("where", "")):
            section = sections((README.parent / path).read_text(encoding="utf-8")).get(anchor, "")
            assert "not measured" in section.lower(), f"{path}#{anchor} is measured now: quote it in {row}"


@pytest.mark.parametrize("row", every_declared_row(), ids=lambda row: next(iter(row.values()))[:60])
def test_every_suite_figure_is_on_the_linked_section(row):
    missing = missing_figures(row)
    assert not missing, f"not in the linked section {row['where']}: {missing}"


def test_a_changed_figure_fails():
    """The check can fail: the same row with one figure altered is caught."""
    row = next(r for r in every_declared_row() if r["claim"] == "RL-trained steering gains at ~1 intervention per task")
    assert not missing_figures(row)
    figure = figures(row["the suite [95% CI]"])[0]
    mean, _, interval = figure.partition(" ")
    altered_mean = f"{float(mean) + 0.01:+.2f}"
    suite = row["the suite [95% CI]"].replace(figure, f"{altered_mean} {interval}")
    altered = dict(row, **{"the suite [95% CI]": suite})
    assert missing_figures(altered) == [f"{altered_mean} {interval}"]
    moved = dict(
        row,
        where=row["where"].replace("#rate-matched-comparison-on-simdefault-test-split", "#transfer-across-profiles"),
    )
    assert missing_figures(moved)  # the right figure under the wrong heading


def test_every_relative_link_of_the_readme_resolves():
    """The README is a front page: what it moved out lives behind its links, so each must reach a file (and, with a
    fragment, a heading of that file)."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len(relative) >= 20
    for link in relative:
        path, _, anchor = link.partition("#")
        page = (README.parent / path).resolve() if path else README
        assert page.exists(), f"README links {link}: no such file"
        if anchor:
            assert anchor in sections(page.read_text(encoding="utf-8")), f"README links {link}: no such heading"
