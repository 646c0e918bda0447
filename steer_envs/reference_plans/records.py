"""Typed records of reference plans: the action sequences that guide a learning search agent.

A reference plan is what another agent did (or what the task's gold structure says to do) on one task, as a
list of named actions with JSON arguments, the form the ACTGUIDE-RL public implementation stores
(``{"name": "search", "args": {"query": ...}}``). Only two action names exist in the search protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import DataFormatError

SEARCH = "search"
ANSWER = "answer"
ACTION_NAMES: tuple[str, ...] = (SEARCH, ANSWER)
#: the argument each action name carries
ARG_KEY: dict[str, str] = {SEARCH: "query", ANSWER: "answer"}


@dataclass(frozen=True)
class PlanAction:
    """One reference action: ``search`` with ``{"query": q}`` or ``answer`` with ``{"answer": a}``."""

    name: str
    args: dict[str, str] = field(hash=False)

    def __post_init__(self) -> None:
        if self.name not in ACTION_NAMES:
            raise DataFormatError(f"unknown plan action {self.name!r}; valid names: {', '.join(ACTION_NAMES)}")
        key = ARG_KEY[self.name]
        value = self.args.get(key) if isinstance(self.args, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise DataFormatError(
                f"plan action {self.name!r} needs a non-empty string argument {key!r}, got {self.args!r}"
            )

    @property
    def text(self) -> str:
        """The action's argument (the query or the answer)."""
        return self.args[ARG_KEY[self.name]]

    @staticmethod
    def search(query: str) -> PlanAction:
        return PlanAction(SEARCH, {"query": " ".join(query.split())})

    @staticmethod
    def answer(answer: str) -> PlanAction:
        return PlanAction(ANSWER, {"answer": " ".join(answer.split())})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args)}


@dataclass(frozen=True)
class ReferencePlan:
    """``{task_id, actions, source}``: ``source`` names where it came from (a trajectory file or a gold
    structure: ``gold:decomposition``, ``gold:evidence``, ``gold:supporting_titles``, ``gold:subject``)."""

    task_id: str
    actions: tuple[PlanAction, ...]
    source: str

    def __post_init__(self) -> None:
        if not self.actions:
            raise DataFormatError(f"reference plan for {self.task_id!r} ({self.source}) has no actions")

    def __len__(self) -> int:
        return len(self.actions)

    def prefix(self, k: int) -> tuple[PlanAction, ...]:
        return self.actions[: max(0, k)]

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "actions": [a.to_dict() for a in self.actions], "source": self.source}

    @staticmethod
    def from_dict(obj: dict[str, Any], where: str = "reference") -> ReferencePlan:
        try:
            actions = tuple(PlanAction(str(a["name"]), dict(a["args"])) for a in obj["actions"])
            return ReferencePlan(str(obj["task_id"]), actions, str(obj.get("source", "unknown")))
        except (KeyError, TypeError) as exc:
            raise DataFormatError(
                f"{where}: a reference plan needs task_id, actions [{{name, args}}] ({exc})"
            ) from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
