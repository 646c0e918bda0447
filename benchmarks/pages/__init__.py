"""The results pages, each declared on one page builder (:mod:`.builder`).

``docs/results.md`` (:mod:`.results`), ``docs/results_actguide.md`` (:mod:`.actguide`), ``docs/results_handoff.md``
(:mod:`.handoff`) and ``docs/results_testbed.md`` (:mod:`.testbed`) are each a list of sections rendered from run
folders; ``steer-envs report PAGE [--out RUNS] [--doc FILE]`` rebuilds one without running anything. The runs
themselves are made by each page's generator (``python -m benchmarks.harness.results_doc``, ``...actguide_doc``,
``benchmarks.handoff_results``), which hands the page to the builder when it is done.

To add a page: write a module here with ``load(out) -> dict`` (read the run folder) and a ``PAGE = Page(...)`` of
sections, put its prose in ``templates/*.md``, and add the module's name to :data:`PAGE_MODULES`.
"""
from __future__ import annotations

import importlib

from steer_envs.errors import SteerEnvsError

from .builder import Page, PageContext, Section, template

#: page name -> the module that declares it as ``PAGE`` (or ``module:NAME``; imported on use: the pages import
#: torch-heavy code)
PAGE_MODULES = {
    "results": "benchmarks.pages.results",
    "results_actguide": "benchmarks.pages.actguide",
    "results_handoff": "benchmarks.pages.handoff",
    "results_testbed": "benchmarks.pages.testbed",
    "results_actguide_regions": "benchmarks.pages.actguide_regions",
    "results_actguide_regions_train": "benchmarks.pages.actguide_regions:TRAIN_PAGE",
    "results_actguide_schedule": "benchmarks.pages.actguide_schedule",
    "results_llm_headline": "benchmarks.pages.llm_headline",
}


def page_names() -> list[str]:
    return list(PAGE_MODULES)


def get_page(name: str) -> Page:
    """The page declared under ``name`` (``results``, ``results_actguide``, ...)."""
    if name not in PAGE_MODULES:
        raise SteerEnvsError(f"unknown results page {name!r}; known: {', '.join(PAGE_MODULES)}")
    module, _, attribute = PAGE_MODULES[name].partition(":")  # "module" declares PAGE; "module:NAME" another page
    return getattr(importlib.import_module(module), attribute or "PAGE")


__all__ = ["PAGE_MODULES", "Page", "PageContext", "Section", "get_page", "page_names", "template"]
