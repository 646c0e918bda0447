"""One page builder: a results page is a list of sections rendered from run folders, written atomically.

Why: a page whose generator mixes the runs, the statistics and the page text, with code facts and measured numbers
pasted into Python strings, drifts from the code. Here a page *declares* its
sections (:class:`Section`: a name and a function of the :class:`PageContext`); prose lives in markdown templates
(``benchmarks/pages/templates/*.md``), code facts are read from the code (:mod:`.codefacts`), measured numbers only
from run folders (what ``load`` reads), and the page is written with :func:`steer_envs.atomic.atomic_write_text`
(a reader never sees half a page). Every page is rebuilt from its run folders with ``steer-envs report PAGE``.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from steer_envs.atomic import atomic_write_text
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT

TEMPLATES = Path(__file__).resolve().parent / "templates"


@lru_cache(maxsize=64)
def read_run_json(path: Path, generator: str) -> Any:
    """A page's record in its run folder (what its generator wrote), or a clear error naming the command that
    writes it: a page is only rebuilt, never run, by ``steer-envs report``."""
    if not path.is_file():
        raise SteerEnvsError(
            f"{path} is missing: the page is rebuilt from the run folders of `{generator}`; run it first"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _template_text(name: str) -> str:
    path = TEMPLATES / f"{name}.md"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in TEMPLATES.glob("*.md")))
        raise SteerEnvsError(f"no page template {name!r} in {TEMPLATES}; known: {known}")
    return path.read_text(encoding="utf-8")


def template(name: str, **values: Any) -> str:
    """The markdown template ``templates/NAME.md`` with ``$placeholders`` filled (``string.Template``: markdown
    keeps its braces). A placeholder without a value is an error that names it."""
    try:
        return string.Template(_template_text(name)).substitute(values)
    except KeyError as exc:
        raise SteerEnvsError(f"template {name!r} needs a value for ${exc.args[0]}") from None


@dataclass
class PageContext:
    """What a section renders from: the run folder(s) ``out``, the page path ``doc`` (plots are copied next to
    it), and ``data``: what the page's ``load`` read from the run folders (sections may add to it)."""

    out: Path
    doc: Path
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Section:
    """One part of a page: ``render(ctx)`` returns its markdown (an empty string leaves it out)."""

    name: str
    render: Callable[[PageContext], str]


def template_section(name: str, template_name: str) -> Section:
    """A section that is prose only: the template ``template_name``, with no placeholders."""
    return Section(name, lambda ctx: template(template_name))


def page_sections(*parts: Callable[[PageContext], str] | Section) -> tuple[Section, ...]:
    """A page's sections in order: a render function is named after itself (``_dev_notes`` is the section "dev
    notes"), so a page lists each function once; a :class:`Section` (a template, a name of its own) stays as it is."""
    sections = []
    for part in parts:
        if isinstance(part, Section):
            sections.append(part)
            continue
        name = part.__name__.strip("_").replace("_", " ")
        if name == "<lambda>":
            raise SteerEnvsError("a page section needs a named render function or a Section with its own name")
        sections.append(Section(name, part))
    return tuple(sections)


@dataclass(frozen=True)
class Page:
    """A results page: where it goes (``doc``, relative to the repository), which run folder it reads by default
    (``out``), what it reads there (``load``: measured numbers only) and its sections, in order."""

    name: str
    help: str
    doc: str
    out: str
    load: Callable[[Path], dict[str, Any]]
    sections: tuple[Section, ...]

    def context(
        self, out: str | Path | None = None, doc: str | Path | None = None, data: dict[str, Any] | None = None
    ) -> PageContext:
        """The context of a build; ``data``: what ``load`` already read from ``out`` (pages that share a loader
        and its folders are built from one read)."""
        out_path = Path(out if out is not None else self.out)
        if not out_path.is_dir():
            raise SteerEnvsError(
                f"{out_path} is not a folder of runs for page {self.name!r}; run its generator first "
                f"or pass --out RUN_DIR"
            )
        doc_path = Path(doc) if doc is not None else REPO_ROOT / self.doc
        return PageContext(out_path, doc_path, self.load(out_path) if data is None else data)

    def render(self, ctx: PageContext) -> str:
        return "".join(section.render(ctx) for section in self.sections)

    def build(
        self, out: str | Path | None = None, doc: str | Path | None = None, data: dict[str, Any] | None = None
    ) -> Path:
        """Render every section from the run folders (or from ``data``, what ``load`` read there) and write the page
        atomically; return its path."""
        ctx = self.context(out, doc, data)
        text = self.render(ctx)
        ctx.doc.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(ctx.doc, text)
        return ctx.doc


def text(value: str | Callable[[PageContext], str]) -> Callable[[PageContext], str]:
    """A section body that is fixed text (or already a function of the context)."""
    return value if callable(value) else (lambda ctx: value)
