"""The results pages, each declared on one page builder (:mod:`.builder`).

``docs/results.md`` (:mod:`.results`), ``docs/results_actguide.md`` (:mod:`.actguide`), ``docs/results_handoff.md``
(:mod:`.handoff`), ``docs/results_testbed.md`` (:mod:`.testbed`) and ``docs/results_llm_headline.md``
(:mod:`.llm_headline`) are each a list of sections rendered from run folders;
``steer-envs report PAGE [--out RUNS] [--doc FILE]`` rebuilds one without running anything. The runs themselves are
made by each page's generator (``python -m benchmarks.harness.results_doc``, ``...actguide_doc``,
``benchmarks.handoff_results``, ``benchmarks.llm_headline``), which hands the page to the builder when it is done.
The pages of one-off studies are not declared here: a study lives in the repository's ``studies/`` folder, apart
from the installed packages.

To add a page: write a module here with ``load(out) -> dict`` (read the run folder) and a ``PAGE = Page(...)`` of
sections, put its prose in ``templates/*.md``, and add the module's name to :data:`PAGE_MODULES`.
"""

from __future__ import annotations

import importlib

from steer_envs.errors import SteerEnvsError

from .builder import Page, PageContext, Section, template

#: page name -> the module that declares it as ``PAGE`` (imported on use: the pages import torch-heavy code)
PAGE_MODULES = {
    "results": "benchmarks.pages.results",
    "results_actguide": "benchmarks.pages.actguide",
    "results_handoff": "benchmarks.pages.handoff",
    "results_testbed": "benchmarks.pages.testbed",
    "results_llm_headline": "benchmarks.pages.llm_headline",
    "results_drift": "benchmarks.pages.drift",
}


def page_names() -> list[str]:
    return list(PAGE_MODULES)


def get_page(name: str) -> Page:
    """The page declared under ``name`` (``results``, ``results_actguide``, ...)."""
    if name not in PAGE_MODULES:
        raise SteerEnvsError(f"unknown results page {name!r}; known: {', '.join(PAGE_MODULES)}")
    return importlib.import_module(PAGE_MODULES[name]).PAGE


__all__ = ["PAGE_MODULES", "Page", "PageContext", "Section", "get_page", "page_names", "template"]
