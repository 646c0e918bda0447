"""The project's import graph has no circle, and the floors point one way.

The graph is built from the source with :mod:`ast`, without importing anything, over the four packages
(``steer_envs``, ``agents``, ``baselines``, ``benchmarks``). An edge ``a -> b`` means running module ``a`` can
import module ``b``:

* imports at module level and inside functions both count (a function-level import is a deferred edge, and a
  circle through it is still a circle: the two modules cannot be understood or moved apart);
* imports under ``if TYPE_CHECKING:`` count too: they never run, but the annotation makes one module's meaning
  depend on the other, and the circle is the same to a reader (the pipeline's roles annotate their argument with a
  protocol of their own, :class:`steer_envs.executors.pipeline.host.PipelineHost`, instead of ``Pipeline``);
* ``importlib.import_module("literal")`` counts like an ``import`` (a registry that imports its catalogue by name
  is still an edge);
* relative imports are resolved against the importing module's package; ``from pkg import name`` is an edge to
  ``pkg.name`` when that is a module (a submodule import), else to ``pkg``;
* **package ``__init__``**: ``import a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` before ``a/b/c``, so an edge
  to a module is also an edge to each package above it, *except* to the packages that contain the importer itself.
  Python initialises a module's own parent packages before the module runs, so an import by ``a/b/x`` can never
  start ``a/__init__`` or ``a/b/__init__`` again; counting those edges would make every package whose ``__init__``
  re-exports a submodule look circular. A package's ``__init__`` importing its own submodules is an ordinary edge.

Lazy ``"module:function"`` strings in registries are data, not imports, and are not edges.

The one-off studies (``studies/``) and the perf suite (``perf/``), both run from a checkout, stand apart: they import
the product, and no module of the installed packages imports them (:func:`lab_imports`, over the same imports as the
graph's, each as written).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("steer_envs", "agents", "baselines", "benchmarks")
#: what ``steer_envs`` (the bottom floor) must never import
UPPER_FLOORS = ("agents", "baselines", "benchmarks", "studies", "perf")
#: the top-level folders of the one-off studies and the perf suite: not installed, imported by no installed module
LAB = ("studies", "perf")


def module_files(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """``dotted module name -> file`` for every module of ``packages`` (a package is its ``__init__``)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_package(name: str, files: dict[str, Path]) -> bool:
    return files[name].name == "__init__.py"


def _targets(node: ast.AST, module: str, files: dict[str, Path]) -> list[str]:
    """The project modules one import statement (or ``importlib.import_module("x")`` call) names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            package = module if _is_package(module, files) else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        else:
            base = node.module or ""
        named = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in files]
        return [base, *named]
    if (
        isinstance(node, ast.Call)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "import_module" and not node.args[0].value.startswith("."):
            return [node.args[0].value]
    return []


def imported_names(tree: ast.AST, module: str, files: dict[str, Path]) -> list[str]:
    """Every module name one module's imports and ``importlib.import_module("x")`` calls name, as written (resolved
    only for relative imports): unlike :func:`_targets`, names outside the walked packages are kept."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            names += [node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            names += _targets(node, module, files)
    return names


def lab_imports(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES, lab: tuple[str, ...] = LAB) -> list[str]:
    """``module -> name`` for every import of a study or the perf suite (``lab``, or below) by a module of
    ``packages``."""
    files = module_files(root, packages)
    found = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += sorted(
            {f"{module} -> {name}" for name in imported_names(tree, module, files) if name.split(".")[0] in lab}
        )
    return found


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """``module -> the project modules it imports`` (module level and in functions; see the module docstring)."""
    files = module_files(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in files}
    for module, path in files.items():
        own_packages = {module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            for target in _targets(node, module, files):
                # the target and every package above it that the importer is not itself inside
                parts = target.split(".")
                for depth in range(1, len(parts) + 1):
                    name = ".".join(parts[:depth])
                    if name in files and name != module and name not in own_packages:
                        graph[module].add(name)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module, each as one circle through it (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan: the graph is deep enough to hit the recursion limit
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return [_circle(graph, set(component)) for component in components]


def _circle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """One closed path inside a strongly connected component (breadth-first back to its first module)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return sorted(component)


def test_no_import_circle():
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles (a -> b: a imports b; one circle per tangle):\n" + "\n".join(
        " -> ".join(c) for c in cycles
    )


def test_steer_envs_imports_no_upper_floor():
    graph = import_graph()
    bad = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == "steer_envs"
        for target in targets
        if target.split(".")[0] in UPPER_FLOORS
    )
    assert not bad, "steer_envs must not import agents, baselines, benchmarks, studies or perf:\n" + "\n".join(bad)


def test_no_installed_module_imports_a_study_or_the_perf_suite():
    for folder in LAB:  # the folders the rule is about are where it says
        assert (ROOT / folder / "__init__.py").is_file()
    bad = lab_imports()
    assert not bad, "studies/ and perf/ are not installed; nothing installed may import them:\n" + "\n".join(bad)


def test_study_imports_are_found_in_every_form(tmp_path):
    """Each form of import a package could reach a study with makes the check fail, on a tree made here."""
    forms = {
        "pkg/__init__.py": "",
        "pkg/a.py": "import studies.x.run\n",
        "pkg/b.py": "def f():\n    from studies.x import run\n",
        "pkg/c.py": "import importlib\nimportlib.import_module('studies.y')\n",
        "pkg/d.py": "from studies import x\n",
        "pkg/e.py": "from perf.suite import main\n",
        "pkg/ok.py": "import studies_like\nimport perfect\nfrom . import a\n",
    }
    for name, text in forms.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert lab_imports(tmp_path, ("pkg",)) == [
        "pkg.a -> studies.x.run",
        "pkg.b -> studies.x",
        "pkg.b -> studies.x.run",
        "pkg.c -> studies.y",
        "pkg.d -> studies",
        "pkg.d -> studies.x",
        "pkg.e -> perf.suite",
        "pkg.e -> perf.suite.main",
    ]


def test_graph_rules_on_a_small_tree(tmp_path):
    """The graph's rules, on a tree made here: each rule can make the checks fail."""
    files = {
        "pkg/__init__.py": "from .a import A\n",  # an __init__ importing its submodule: an edge
        "pkg/a.py": "from . import b\nA = 1\n",  # from-import of a submodule -> pkg.b, not pkg
        "pkg/b.py": "def f():\n    from pkg.sub import c\n",  # function level; pkg.sub.c and pkg.sub
        "pkg/errors.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "from .. import errors\nimport importlib\nimportlib.import_module('low.x')\n",
        "low/__init__.py": "",
        "low/x.py": "import pkg.b\n",  # pkg.b and pkg (low is not inside pkg)
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path, ("pkg", "low"))
    assert graph["pkg"] == {"pkg.a"}
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.errors", "low", "low.x"}
    assert graph["low.x"] == {"pkg", "pkg.b"}
    assert find_cycles(graph) == [["low.x", "pkg.b", "pkg.sub.c", "low.x"]]  # the shortest circle of the component
    (tmp_path / "low/x.py").write_text("def g():\n    import pkg.errors\n")  # still runs pkg/__init__
    assert find_cycles(import_graph(tmp_path, ("pkg", "low"))) == [
        ["low.x", "pkg", "pkg.a", "pkg.b", "pkg.sub.c", "low.x"]
    ]
    (tmp_path / "pkg/__init__.py").write_text("")
    assert find_cycles(import_graph(tmp_path, ("pkg", "low"))) == []
