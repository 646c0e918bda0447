"""Synthetic task families that GuidedSearch-v0 adds to a split's tasks (the env option ``task_family``).

A family brings its own tasks, their reference plans (from the family's gold structure) and the passages its tasks
are answered from, behind its own retriever; the real benchmarks' tasks, corpus and retriever are untouched. A
family is a registered name (:data:`TASK_FAMILIES`), so the env never branches on which one it runs.

* ``skill_chain`` (:mod:`.skill_chain`): chained lookups whose success needs a skill that real tasks never
  reward (carry an entity named in an unrelated-looking sentence of one document into the next search, twice).
"""

from .registry import TASK_FAMILIES, TaskFamily, get_task_family, register_task_family

__all__ = ["TASK_FAMILIES", "TaskFamily", "get_task_family", "register_task_family"]
