"""Markdown tables for the pages: one function, so every page's tables share one format."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_table(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    align: str | Sequence[str] = "---",
    trailing_newline: bool = True,
    spaced: bool = False,
) -> str:
    """``| a | b |`` rows under a header; ``align`` one marker for every column or one per column (``---``,
    ``---:``); ``spaced`` writes the rule as ``| --- | --- |`` instead of ``|---|---|``."""
    marks = [align] * len(header) if isinstance(align, str) else list(align)
    rule = "| " + " | ".join(marks) + " |" if spaced else "|" + "|".join(marks) + "|"
    lines = [_row(header), rule] + [_row(row) for row in rows]
    return "\n".join(lines) + ("\n" if trailing_newline else "")


def table_lines(page: str) -> list[str]:
    """The table rows of a markdown page (every line that starts with ``|``), in order: what the page tests count and
    compare between a generated page and its rebuild."""
    return [line for line in page.splitlines() if line.startswith("|")]


def _row(cells: Sequence[object]) -> str:
    """``| a | b |``; an empty cell is ``| |``."""
    return "|" + "|".join(f" {c} " if str(c) else " " for c in cells) + "|"
