"""User-facing text says what is: no documents outside the repository, no issue numbers, no history of the work.

The repository is read on its own: a reader has neither the working notes nor the issue tracker it was built
from, so a pointer to either is a dead end (the methods themselves are in ``docs/methods.md``). Docs and docstrings
describe the code as it is; how it came to be belongs in the commit history.

Scanned: ``README.md``, ``BENCHMARKS.md``, ``docs/*.md`` and every ``.py`` file of the installed packages
(``CHANGELOG.md`` is a history by design); the tests, the studies and the page templates for outside documents and
issue numbers. The results pages (``docs/results.md``, ``docs/results_*.md``) are
scanned for outside documents and issue numbers but not for the history vocabulary: they report measurements made
at named commits, and their builders (``benchmarks/pages/``) write their prose.

The history vocabulary is a list of phrases, not single words, chosen to have no legitimate use here ("session" is
an HTTP session of the env server, "the old" is a file's previous content in an atomic write).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("steer_envs", "agents", "baselines", "benchmarks")

#: working documents that live outside the repository
OUTSIDE_DOCUMENTS = re.compile(r"\b(?:PAPERS|DESIGN)\.md\b")
#: a reference to an issue of the tracker ("issue 21", "issue #21", "issues 18-19")
ISSUE_REFERENCE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
#: narration of how the work went, in docs and docstrings alike
HISTORY_EVERYWHERE = (
    r"\bkept as history\b",
    r"\bthe earlier computation\b",
    r"\bfirst[- ]wave\b",
    r"\bprevious session\b",
    r"\bother engineers\b",
    r"\bthe brief\b",
    r"\b(?:this|last|previous) stop\b",
    r"\bstop \d+\b",
    r"\bearlier versions? of this\b",
)
#: narration that only user-facing docs are checked for (in code these words also name real things)
HISTORY_IN_DOCS = (
    r"\bthis session\b",
    r"\bengineers?\b",
    r"\bwas replaced\b",
    r"\bprevious version\b",
    r"\bthe old (?:servers?|tool|page|names?|harness|code|version|handler)\b",
)
HISTORY_CODE = re.compile("|".join(HISTORY_EVERYWHERE), re.IGNORECASE)
HISTORY_DOCS = re.compile("|".join(HISTORY_EVERYWHERE + HISTORY_IN_DOCS), re.IGNORECASE)


def user_docs() -> list[Path]:
    return [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]


def is_results_page(path: Path) -> bool:
    return path.parent.name == "docs" and (path.name == "results.md" or path.name.startswith("results_"))


def package_sources() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]


def repository_texts() -> list[Path]:
    """Every other text of the repository a reader may open: tests, studies and the page templates. Scanned for
    outside documents and issue numbers only (this module names both in its own patterns, so it is left out)."""
    found = [p for folder in ("tests", "studies") for p in sorted((ROOT / folder).rglob("*.py"))]
    found += sorted((ROOT / "studies").rglob("*.md")) + sorted((ROOT / "benchmarks").rglob("*.md"))
    return [p for p in found if p != Path(__file__).resolve()]


def offending_lines(paths: list[Path], pattern: re.Pattern[str]) -> list[str]:
    """``path:line: text`` of every line of ``paths`` that ``pattern`` finds something in."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            match = pattern.search(line)
            if match:
                excerpt = line[max(0, match.start() - 30) : match.end() + 30]
                found.append(f"{path.relative_to(ROOT)}:{number}: ...{excerpt}...")
    return found


def fail_on(what: str, found: list[str]) -> None:
    if found:
        pytest.fail(f"{len(found)} line(s) with {what}:\n" + "\n".join(found), pytrace=False)


@pytest.mark.parametrize(
    "pattern, should_match, text",
    [
        (OUTSIDE_DOCUMENTS, True, "the gate (PAPERS.md A, step 2)"),
        (OUTSIDE_DOCUMENTS, True, "a headroom ladder (DESIGN.md testbed rule 7)"),
        (OUTSIDE_DOCUMENTS, False, "see docs/methods.md and README.md"),
        (ISSUE_REFERENCE, True, "(issue 21, step 4)"),
        (ISSUE_REFERENCE, True, "before issues 18-19"),
        (ISSUE_REFERENCE, True, "see Issue #7"),
        (ISSUE_REFERENCE, False, "a known issue with the tokenizer; replay:r1_searcher_qwen#12; colour #1234ff"),
        (HISTORY_DOCS, True, "the first wave's record (kept as history)"),
        (HISTORY_DOCS, True, "the criterion was fixed in stop 30's closing note"),
        (HISTORY_DOCS, True, "other engineers' jobs shared the machine"),
        (HISTORY_DOCS, False, "one env replica per session; the goal stays, the oldest turns are elided"),
        (HISTORY_CODE, False, 'raise RequestError(404, "this session was closed")'),
        (HISTORY_CODE, False, "a file is either the old version or the complete new one; no longer fits the context"),
    ],
)
def test_the_patterns_find_what_they_are_for_and_nothing_else(pattern, should_match, text):
    assert bool(pattern.search(text)) is should_match


def test_scanned_files_exist():
    docs, sources = user_docs(), package_sources()
    assert all(p.is_file() for p in docs) and (ROOT / "docs" / "methods.md") in docs
    assert {p.relative_to(ROOT).parts[0] for p in sources} == set(PACKAGES)


def test_no_documents_outside_the_repository_are_named():
    found = offending_lines(user_docs() + package_sources() + repository_texts(), OUTSIDE_DOCUMENTS)
    fail_on("a document outside the repository", found)


def test_no_issue_numbers():
    found = offending_lines(user_docs() + package_sources() + repository_texts(), ISSUE_REFERENCE)
    fail_on("an issue reference", found)


def test_user_facing_docs_carry_no_history_of_the_work():
    docs = [p for p in user_docs() if not is_results_page(p)]
    found = offending_lines(docs, HISTORY_DOCS)
    fail_on("history narration", found)


def test_docstrings_and_comments_carry_no_history_of_the_work():
    found = offending_lines(package_sources(), HISTORY_CODE)
    fail_on("history narration", found)
