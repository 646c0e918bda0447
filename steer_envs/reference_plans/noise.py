"""Noisy reference plans: a share of plan actions replaced by plausible wrong ones (the paper's 10% / 20% study).

"Plausible" means on topic: a replaced search asks about a *distractor* passage of the same task (a passage shipped
with the question that does not support the answer), a replaced answer names such a distractor's title. Which
actions are replaced is a Bernoulli draw per action, seeded by ``(seed, task id)``, so a noisy data set is the same
in every process and the expected share of replaced actions is ``share``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np

from ..data.records import Task
from ..errors import SteerEnvsError
from .records import ANSWER, PlanAction, ReferencePlan


def distractor_titles(task: Task, title_of: Callable[[str], str]) -> list[str]:
    """Titles of the task's passages that neither support nor contain the answer (in file order, unique)."""
    gold = set(task.supporting_ids) | set(task.answer_bearing_ids)
    titles = [title_of(pid) for pid in task.passage_ids if pid not in gold]
    answers = {a.lower() for a in task.golden_answers}
    return list(dict.fromkeys(t for t in titles if t and t.lower() not in answers))


def inject_noise(
    seq: ReferencePlan, share: float, seed: int, distractors: Sequence[str], fallback: Sequence[str] = ()
) -> ReferencePlan:
    """``seq`` with each action replaced, with probability ``share``, by a wrong one built from ``distractors``
    (or ``fallback`` titles when the task has none). The source gets a ``+noise=<share>`` suffix."""
    if not 0.0 <= share <= 1.0:
        raise SteerEnvsError(f"noise share must be in [0, 1], got {share!r}")
    if share == 0.0:
        return seq
    pool = list(distractors) or list(fallback)
    if not pool:
        return seq
    rng = np.random.default_rng([seed, zlib.crc32(seq.task_id.encode())])
    actions = []
    for action in seq.actions:
        if rng.random() < share:
            wrong = pool[int(rng.integers(len(pool)))]
            actions.append(PlanAction.answer(wrong) if action.name == ANSWER else PlanAction.search(wrong))
        else:
            actions.append(action)
    return ReferencePlan(seq.task_id, tuple(actions), f"{seq.source}+noise={share:g}")
