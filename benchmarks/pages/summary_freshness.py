"""Whether a committed summary still describes today's code (the check behind ``python -m benchmarks.pages.freshness``).

A number is current while the code it depends on is the code it was measured with. Every summary names the commits
that measured it; the newer ones also name the repository files those runs loaded
(:func:`benchmarks.harness.provenance.code_record`), and for the older ones the check falls back to the packages a
measurement can touch (:data:`FALLBACK_FILES`). A summary is **stale** when its tree was not clean, when a commit it
names is not in this history, or when any of those files changed between one of its commits and the checkout
(committed or not). A Python file whose syntax tree is the same once docstrings are set aside (:func:`same_code`: an
edit to its docstrings, comments or layout) has not changed what it computes, so it does not make a summary stale; a
moved or deleted file does. The README's headline quotes only current summaries (:mod:`.headline` asks this module), and
:mod:`.freshness` lists them for a maintainer, who knows from it what to remeasure before a release.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from steer_envs.paths import REPO_ROOT

from .code_records import code_of

#: where committed summaries live (relative to the repository)
SUMMARY_GLOBS = (
    "docs/results/**/summary.json",
    "docs/results/**/ladder.json",
    "docs/results/**/results_*.json",
    "docs/data/**/*.json",
    "studies/*/results/**/summary.json",
    "studies/*/results/**/confirmation.json",
)
#: what a summary that does not list its files is taken to depend on: everything a measurement can run
FALLBACK_FILES = ("steer_envs", "agents", "baselines", "benchmarks/harness")


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=60)


def changed_since(commit: str, paths: Sequence[str]) -> list[str] | None:
    """The files among ``paths`` that differ between ``commit`` and the checkout (uncommitted edits included); None
    when ``commit`` is not in this repository's history."""
    if _git("merge-base", "--is-ancestor", commit, "HEAD").returncode != 0:
        return None
    existing = [p for p in paths if (REPO_ROOT / p).exists() or _git("cat-file", "-e", f"{commit}:{p}").returncode == 0]
    if not existing:
        return []
    changed: list[str] = []
    for start in range(0, len(existing), 200):  # bounded command lines
        run = _git("diff", "--name-only", commit, "--", *existing[start : start + 200])
        changed += [line for line in run.stdout.splitlines() if line]
    return sorted(p for p in set(changed) if not _same_code_since(commit, p))


def _same_code_since(commit: str, path: str) -> bool:
    """Whether the Python file ``path`` computes what it did at ``commit`` (see :func:`same_code`)."""
    current = REPO_ROOT / path
    if not path.endswith(".py") or not current.is_file():
        return False
    then = _git("show", f"{commit}:{path}")
    return then.returncode == 0 and same_code(then.stdout, current.read_text(encoding="utf-8"))


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def same_code(before: str, after: str) -> bool:
    """Whether two versions of a Python module have the same syntax tree once the docstrings of the module, its
    classes and functions are set aside: comments, layout and docstrings differ, the code does not. A module that
    reads its own ``__doc__`` (an argparse description) changes only its help text that way. Text that does not
    parse counts as changed."""
    try:
        trees = [_without_docstrings(ast.parse(text)) for text in (before, after)]
    except SyntaxError:
        return False
    return ast.dump(trees[0]) == ast.dump(trees[1])


@dataclass(frozen=True)
class Freshness:
    """One summary's verdict: ``why`` is empty when it is current."""

    source: str
    commits: tuple[str, ...]
    files_recorded: bool
    changed: tuple[str, ...]
    why: str

    @property
    def current(self) -> bool:
        return not self.why

    @property
    def scope(self) -> str:
        """What the check compared: the files its runs loaded, or the packages a measurement can touch."""
        recorded = "files its runs loaded"
        return recorded if self.files_recorded else "packages it may depend on (its files are not recorded)"

    @property
    def reason(self) -> str:
        """``why`` without the number of changed files: what the README says, so that its text does not move with
        every further commit while the summary waits to be remeasured."""
        return f"{self.scope} changed since" if self.changed else self.why


def freshness(source: str | Path) -> Freshness:
    """Whether the summary at ``source`` (a path relative to the repository, or absolute) is current."""
    path = Path(source) if Path(source).is_absolute() else REPO_ROOT / source
    resolved = path.resolve()
    inside = resolved.is_relative_to(REPO_ROOT.resolve())
    name = resolved.relative_to(REPO_ROOT.resolve()).as_posix() if inside else str(path)
    code = code_of(json.loads(path.read_text(encoding="utf-8")))
    recorded = code.files is not None
    if not code.commits:
        return Freshness(name, (), recorded, (), "names no commit")
    if not code.clean:
        return Freshness(name, code.commits, recorded, (), "measured on a tree with uncommitted changes")
    files = [f for f in (code.files if code.files is not None else FALLBACK_FILES) if not is_result(f)]
    # every commit that measured a part of it: a part resumed at a later commit is checked from there too, and a
    # change between two of them counts (the order a record lists its commits in says nothing about their age)
    changed_sets = {c: changed_since(c.removesuffix("+dirty"), files) for c in code.commits}
    missing = [c for c, found in changed_sets.items() if found is None]
    if missing:
        return Freshness(name, code.commits, recorded, (), f"commit {missing[0]} is not in this history")
    changed = tuple(sorted({f for found in changed_sets.values() for f in found or ()}))
    verdict = Freshness(name, code.commits, recorded, changed, "")
    return replace(verdict, why=f"{len(changed)} of the {verdict.scope} changed since") if changed else verdict


#: where measurements write what they measured (the folders of :data:`SUMMARY_GLOBS`): outputs, not code
RESULT_FOLDERS = re.compile(r"^(docs/results/|docs/data/|studies/[^/]+/results/)")


def is_result(path: str) -> bool:
    """Whether ``path`` is a measurement's output rather than code (a study's ``results/`` sits beside its modules,
    so the data files recorded beside them include it)."""
    return RESULT_FOLDERS.match(path) is not None


def committed_summaries() -> list[str]:
    """Every committed summary the globs find (tracked files only)."""
    tracked = set(_git("ls-files").stdout.splitlines())
    found = {p.relative_to(REPO_ROOT).as_posix() for g in SUMMARY_GLOBS for p in REPO_ROOT.glob(g)}
    return sorted(found & tracked)
