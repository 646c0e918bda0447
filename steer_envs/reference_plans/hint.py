"""The hint text: the first ``k`` reference actions as a numbered plan, in the public implementation's format.

Each line is ``"{i}. {name}: {json args}"``; the block starts with ``Reference action trajectory hint:`` and says
the plan may be partial (the learner must finish the task itself). ``k = 0`` gives no hint at all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..errors import SteerEnvsError
from .records import PlanAction

HINT_HEADER = "Reference action trajectory hint:"
HINT_PREAMBLE = (
    "Follow the partial action trajectory hint to take actions; the trajectory may be incomplete and you may still "
    "need extra actions to finish the task."
)


def hint_lines(actions: Sequence[PlanAction], k: int) -> list[str]:
    """``["1. search: {\"query\": ...}", ...]`` for the first ``k`` actions."""
    return [f"{i}. {a.name}: {json.dumps(a.args, ensure_ascii=False)}" for i, a in enumerate(actions[: max(0, k)], 1)]


def format_plan_hint(actions: Sequence[PlanAction], k: int) -> str:
    """The hint block for the first ``k`` actions, or ``""`` when ``k <= 0`` or there are no actions."""
    lines = hint_lines(actions, k)
    if not lines:
        return ""
    return "\n".join([HINT_PREAMBLE, HINT_HEADER, *lines])


def parse_plan_hint(text: str) -> list[PlanAction]:
    """Read a hint block back into actions (lines that do not parse are skipped): a learner that sees only the
    prompt text can recover the plan from it."""
    actions: list[PlanAction] = []
    started = False
    for line in text.splitlines():
        if line.strip() == HINT_HEADER:
            started = True
            continue
        if not started:
            continue
        head, sep, rest = line.partition(": ")
        number, dot, name = head.partition(". ")
        if not sep or not dot or not number.strip().isdigit():
            continue
        try:
            args = json.loads(rest)
            actions.append(PlanAction(name.strip(), args))
        except (json.JSONDecodeError, SteerEnvsError, TypeError):
            continue
    return actions
