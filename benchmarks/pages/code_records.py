"""What a committed summary says about the code that measured it, in any of the shapes its writers have used: read by
the README's headline (the commit each row names) and by the freshness check (whether that code changed since)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CodeRecord:
    """The code a summary says it was measured with: its commits (oldest first), whether every tree was clean, and
    the files its runs loaded (None: not recorded, :data:`FALLBACK_FILES` stand in)."""

    commits: tuple[str, ...]
    clean: bool
    files: tuple[str, ...] | None


def code_of(data: dict[str, Any]) -> CodeRecord:
    """The :class:`CodeRecord` of a summary's JSON: its ``code`` record, else the commits its setting card (or a
    ``commits`` / ``code`` field, or each transfer cell) names; a commit marked ``+dirty`` makes it unclean."""
    if isinstance(data.get("code"), dict):
        code = data["code"]
        return CodeRecord(tuple(code["commits"]), bool(code["clean"]), tuple(code["files"]))
    card = data.get("card") if isinstance(data.get("card"), dict) else {}
    found = card.get("commits") or data.get("commits") or data.get("code") or ()
    if not found and isinstance(data.get("cells"), list):  # a transfer summary: each cell names its own
        found = list(dict.fromkeys(c for cell in data["cells"] for c in cell.get("commits", ())))
    commits = (found,) if isinstance(found, str) else tuple(found)
    return CodeRecord(commits, bool(commits) and not any("+dirty" in c for c in commits), None)
