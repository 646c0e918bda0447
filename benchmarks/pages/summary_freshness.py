"""Whether a committed summary still describes today's code (the check behind ``python -m benchmarks.pages.freshness``).

A number is current while the code it depends on is the code it was measured with. Every summary names the commits
that measured it; the newer ones also name the repository files those runs loaded
(:func:`benchmarks.harness.provenance.code_record`), and for the older ones the check falls back to the packages a
measurement can touch (:data:`FALLBACK_FILES`). A summary is **stale** when its tree was not clean, when a commit it
names is not in this history, or when any of those files changed between one of its commits and the checkout
(committed or not). A Python file whose syntax tree is the same once docstrings are set aside (:func:`same_code`: an
edit to its docstrings, comments or layout) has not changed what it computes, so it does not make a summary stale;
nor does a move: a file that git finds renamed (committed or staged) is compared at its new path, and in every file
the names of moved modules are read as their new names (:class:`Moves`), so moving a module and updating its
importers changes nothing a summary depends on. A deleted file, or a moved one whose code changed, does. The
README's headline quotes only current summaries (:mod:`.headline` asks this module), and
:mod:`.freshness` lists them for a maintainer, who knows from it what to remeasure before a release.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from collections.abc import Callable, Sequence
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
    when ``commit`` is not in this repository's history. A file moved since is compared at its new path."""
    if _git("merge-base", "--is-ancestor", commit, "HEAD").returncode != 0:
        return None
    existing = [p for p in paths if (REPO_ROOT / p).exists() or _git("cat-file", "-e", f"{commit}:{p}").returncode == 0]
    if not existing:
        return []
    changed: list[str] = []
    for start in range(0, len(existing), 200):  # bounded command lines
        run = _git("diff", "--name-only", commit, "--", *existing[start : start + 200])
        changed += [line for line in run.stdout.splitlines() if line]
    if not changed:
        return []
    moves = Moves.since(commit)
    return sorted(p for p in set(changed) if not _same_code_since(commit, p, moves))


@dataclass(frozen=True)
class Moves:
    """The files git finds renamed between a commit and the checkout (``old path -> new path``, committed or staged
    moves), and what they rename: each moved module's dotted name and each moved folder's path."""

    files: dict[str, str]

    @classmethod
    def since(cls, commit: str) -> Moves:
        run = _git("diff", "-M", "--name-status", "-z", commit)
        fields = run.stdout.split("\0")
        files: dict[str, str] = {}
        at = 0
        while at < len(fields) - 1:
            status = fields[at]
            if status.startswith(("R", "C")):
                if status.startswith("R"):
                    files[fields[at + 1]] = fields[at + 2]
                at += 3
            else:
                at += 2
        return cls(files)

    @property
    def names(self) -> dict[str, str]:
        """``old -> new`` for the dotted name of every moved module (a moved ``__init__.py`` renames its package)
        and the path of every moved folder, longest first so that a module's own move wins over its package's."""
        found: dict[str, str] = {}
        for old, new in self.files.items():
            if old.endswith(".py") and new.endswith(".py"):
                found[module_name(old)] = module_name(new)
                if old.endswith("/__init__.py") and new.endswith("/__init__.py"):  # the package's folder moved
                    found[old.removesuffix("/__init__.py")] = new.removesuffix("/__init__.py")
        return dict(sorted(found.items(), key=lambda item: -len(item[0])))


def module_name(path: str) -> str:
    """The dotted module name of a Python file's repository path (a package's ``__init__.py`` names the package)."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _same_code_since(commit: str, path: str, moves: Moves) -> bool:
    """Whether the Python file ``path`` computes what it did at ``commit`` (see :func:`same_code`), at its new path
    if it moved, with the moved modules' names read as their new names."""
    now = moves.files.get(path, path)
    current = REPO_ROOT / now
    if not path.endswith(".py") or not current.is_file():
        return False
    then = _git("show", f"{commit}:{path}")
    return then.returncode == 0 and same_code(
        then.stdout, current.read_text(encoding="utf-8"), renames=moves.names, modules=(path, now)
    )


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def _absolute_imports(tree: ast.AST, path: str) -> ast.AST:
    """Relative imports written as the absolute names they resolve to from the module at ``path``."""
    package = module_name(path).split(".")
    if not path.endswith("/__init__.py") and path != "__init__.py":
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            node.module = ".".join([*base, *([node.module] if node.module else [])])
            node.level = 0
    return tree


def _renamed(tree: ast.AST, renames: dict[str, str]) -> ast.AST:
    """Every module name and folder path in ``renames`` written as its new name: in imports and in string constants
    (lazy ``"module:function"`` registry entries, ``import_module`` arguments, paths)."""
    if not renames:
        return tree
    pattern = re.compile(r"(?<![\w./])(" + "|".join(re.escape(old) for old in renames) + r")(?![\w])")

    def rename(text: str) -> str:
        return pattern.sub(lambda match: renames[match.group(1)], text)

    tree = _AttributeChains(rename).visit(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            node.module = rename(node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                alias.name = rename(alias.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = rename(node.value)
    return tree


class _AttributeChains(ast.NodeTransformer):
    """A module reached through its package's attributes (``import a.b`` then ``a.b.f()``), renamed as a whole."""

    def __init__(self, rename: Callable[[str], str]) -> None:
        self.rename = rename

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        parts, inner = [node.attr], node.value
        while isinstance(inner, ast.Attribute):
            parts.append(inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name):
            dotted = ".".join([inner.id, *reversed(parts)])
            renamed = self.rename(dotted)
            if renamed != dotted:
                return ast.parse(renamed, mode="eval").body
        return self.generic_visit(node)


def same_code(
    before: str, after: str, *, renames: dict[str, str] | None = None, modules: tuple[str, str] | None = None
) -> bool:
    """Whether two versions of a Python module have the same syntax tree once the docstrings of the module, its
    classes and functions are set aside: comments, layout and docstrings differ, the code does not. A module that
    reads its own ``__doc__`` (an argparse description) changes only its help text that way. Text that does not
    parse counts as changed.

    ``modules``: the two versions' repository paths, so that relative imports are compared as the absolute names
    they resolve to (a module moved to another package); ``renames``: the modules and folders moved in between
    (:attr:`Moves.names`), read in ``before`` as their new names."""
    try:
        trees = [_without_docstrings(ast.parse(text)) for text in (before, after)]
    except SyntaxError:
        return False
    if modules is not None:
        trees = [_absolute_imports(tree, path) for tree, path in zip(trees, modules)]
    trees[0] = _renamed(trees[0], renames or {})
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
