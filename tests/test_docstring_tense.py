"""Docstrings and comments say what the code *is* and why, not what it was: the history of a change belongs in
CHANGELOG.md and the commit, where a reader of the code does not have to step over it. (Narration of how the *work*
went, sessions and the like, is ``tests/test_docs_vocabulary.py``'s; this test is about the code's own past.)

The check is over the habit, not over known sentences: a sentence narrates the code's past when it carries a marker
of a contrast between then and now — a past habit (``X used to have``), an adverb of former times (``formerly``,
``previously``, ``originally``), the old version of a part of the code (``the old handler``), a contrastive
``now`` (``Now every arrow``, ``is now read``), or a move of the code (``was moved``, ``were renamed``). Runtime
states keep their tenses (``how many were dropped``, ``the prompt no longer fits``, ``the old version or the new one``
of a file being written)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from steer_envs.paths import REPO_ROOT

#: the trees whose docstrings and comments are checked: what the wheel installs, and the studies
TREES = ("steer_envs", "agents", "baselines", "benchmarks", "studies")
CODE_PARTS = (
    r"(?:handler|home|name|names|code|module|modules|path|paths|api|behaviou?r|implementation|class|function|way)"
)
HISTORY = re.compile(
    "|".join(
        (
            # a past habit of the code (not the passive "is used to compute": that says what a thing is for)
            r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bwas )(?<!\bwere )(?<!\bget )(?<!\bgets )"
            r"\bused to (?:have|say|hold|keep|live|sit|read|write|take|call|carry|need|run|make|give|return|mean|"
            r"fail|drop|count|do|print|load|ask|show|list|store|go|be)\b",
            r"\b(?:formerly|previously|originally|hitherto)\b",
            rf"\bthe (?:old|former|earlier|previous) {CODE_PARTS}\b",
            r"(?:^|[.;:]\s+)Now\b",
            r"\b(?:is|are) now [a-z]",
            r"\bnow (?:lives|live|sits|sit|points|point|reads|writes|takes|goes|runs|returns|calls|uses|holds|keeps)\b",
            r"\b(?:was|were|has been|have been) (?:moved|renamed|rewritten|merged|relocated)\b",
            # a past episode of the code's behaviour ("the test once took 13 GB")
            r"\bonce (?:took|was|were|had|made|ran|cost|used|needed)\b",
            r"\bearlier (?:versions?|releases?|commits?|sessions?)\b",
        )
    ),
    re.IGNORECASE | re.MULTILINE,
)


def narrates_history(text: str) -> list[str]:
    """The stretches of ``text`` that narrate the code's past (see the module docstring)."""
    return [text[max(0, m.start() - 60) : m.end() + 40].replace("\n", " ") for m in HISTORY.finditer(text)]


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """Every docstring (module, class, function) and comment of a Python file, with its line."""
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


@pytest.mark.parametrize(
    "sentence",
    [
        "Each results page used to have its own generator.",
        "when they lived in the registry there was a circle. Now every arrow points down to this module",
        "what a validation error means, in the words the old handler used",
        "The loader was moved to steer_envs.data in the last release.",
        "the cache is now keyed by the file's hash",
        "This helper was formerly part of the CLI.",
        "the causal-LM steerer's training test once took 13 GB",
    ],
)
def test_a_sentence_that_narrates_the_past_is_found(sentence):
    assert narrates_history(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "A short content hash of a file, used to key caches derived from it.",
        "Returns the groups kept and how many were dropped.",
        "the prompt no longer fits the model's context, so the episode ends",
        "a file is either the old version or the complete new one, never half of either",
        "The reference policy: the learner as it is now, never trained.",
        "whether the episode was truncated by the budget",
    ],
)
def test_a_sentence_about_runtime_state_is_not(sentence):
    assert not narrates_history(sentence)


def test_no_docstring_or_comment_narrates_the_codes_history():
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line}: ...{stretch}..."
        for tree in TREES
        for path in sorted((REPO_ROOT / tree).rglob("*.py"))
        for line, text in prose(path)
        for stretch in narrates_history(text)
    ]
    assert not found, "say what the code is (its history goes to CHANGELOG.md):\n" + "\n".join(found)
