"""The registry of synthetic task families and what a family provides (:class:`TaskFamily`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Protocol

from ..data.records import Task
from ..errors import unknown_name
from ..reference_plans.records import ReferencePlan
from ..retrieval.base import Retriever


class TaskFamily(Protocol):
    """A synthetic family: its tasks per split, a reference plan per task, the retriever its tasks search with.

    ``benchmark`` is the name its tasks carry (``Task.benchmark``); ``retriever_key`` names its retriever in the
    search cache. ``distractors`` are plausible wrong actions of a task (the noisy-plan study's replacements)."""

    name: str
    benchmark: str
    retriever_key: str

    def tasks(self, split: str) -> list[Task]: ...

    def owns(self, task_id: str) -> bool: ...

    def reference(self, task_id: str) -> ReferencePlan | None: ...

    def distractors(self, task_id: str) -> list[str]: ...

    def retriever(self) -> Retriever: ...


#: family name -> factory (called once per process: a family is immutable data)
TASK_FAMILIES: dict[str, Callable[[], TaskFamily]] = {}


def register_task_family(name: str, factory: Callable[[], TaskFamily]) -> None:
    """Register a family under ``name`` (the value of GuidedSearch-v0's ``task_family`` option)."""
    TASK_FAMILIES[name] = factory
    get_task_family.cache_clear()


@cache
def get_task_family(name: str) -> TaskFamily:
    """The family registered as ``name`` (built once per process)."""
    _register_builtin()
    if name not in TASK_FAMILIES:
        raise unknown_name("task family", name, sorted(TASK_FAMILIES))
    return TASK_FAMILIES[name]()


def _register_builtin() -> None:
    if "skill_chain" not in TASK_FAMILIES:
        from .skill_chain import SkillChainFamily

        TASK_FAMILIES["skill_chain"] = SkillChainFamily
