"""Where reference plans come from.

* **Real rollouts** (``shared/data/trajectories``): a recorded agent's queries in order, then its answer, kept
  only when that answer is right (exact match with a golden answer), so the plan is a successful one.
* **Gold structure** of the task: MuSiQue decompositions (each sub-question, ``#k`` filled with hop ``k``'s
  answer), 2WikiMultihopQA evidence triples (``subject relation`` per hop), the supporting passages' titles
  (HotpotQA, 2Wiki without triples, NQ, PopQA), or PopQA's ``subject``; then the golden answer.

Both give ``ReferencePlan`` records; :mod:`steer_envs.reference_plans.store` collects and caches them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ..data.records import Task
from ..data.scoring import squad_em
from ..data.trajectories import RecordedRollout, normalize_question
from .records import PlanAction, ReferencePlan

_REF = re.compile(r"#(\d+)")
#: how many searches a reference may hold (recorded agents sometimes loop; a plan of 10 searches guides nothing)
MAX_SEARCHES = 6


def _clean(text: str) -> str:
    return " ".join(text.replace(">>", " ").split())


def _dedupe_searches(queries: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for q in queries:
        key = " ".join(q.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out


def _sequence(task_id: str, queries: Iterable[str], answer: str, source: str) -> ReferencePlan | None:
    searches = _dedupe_searches(_clean(q) for q in queries)[:MAX_SEARCHES]
    if not answer.strip():
        return None
    actions = [PlanAction.search(q) for q in searches] + [PlanAction.answer(answer)]
    return ReferencePlan(task_id, tuple(actions), source)


# -- real rollouts -------------------------------------------------------------------------------------------
def from_rollout(rollout: RecordedRollout, task: Task) -> ReferencePlan | None:
    """The rollout's queries and answer, if it answered ``task`` right and searched at least once."""
    from ..executors.transcript import final_answer, parse_rollout, recorded_queries

    turns = parse_rollout(rollout)
    answer = final_answer(turns)
    if answer is None or squad_em(answer, task.golden_answers) <= 0:
        return None
    queries = [q for q in recorded_queries(turns) if q.strip()]
    if not queries:
        return None
    return _sequence(task.id, queries, answer, f"rollout:{rollout.source}")


def from_rollouts(rollouts: Iterable[RecordedRollout], tasks: Iterable[Task]) -> list[ReferencePlan]:
    """Every successful rollout joined to its task (benchmark + normalised question); first one per source."""
    by_key = {(t.benchmark, normalize_question(t.question)): t for t in tasks}
    out: list[ReferencePlan] = []
    seen: set[tuple[str, str]] = set()
    for rollout in rollouts:
        task = by_key.get((rollout.benchmark, normalize_question(rollout.question)))
        if task is None or (task.id, rollout.source) in seen:
            continue
        seq = from_rollout(rollout, task)
        if seq is not None:
            seen.add((task.id, rollout.source))
            out.append(seq)
    return out


# -- gold structure --------------------------------------------------------------------------------------------
def _from_decomposition(task: Task, title_of: Callable[[str], str]) -> ReferencePlan | None:
    if not task.decomposition:
        return None
    answers = [sub.answer for sub in task.decomposition]
    queries = []
    for sub in task.decomposition:
        queries.append(
            _REF.sub(
                lambda m: answers[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(answers) else "", sub.question
            )
        )
    return _sequence(task.id, queries, task.golden_answers[0], "gold:decomposition")


def _from_evidence(task: Task, title_of: Callable[[str], str]) -> ReferencePlan | None:
    if not task.evidences:
        return None
    return _sequence(task.id, [f"{s} {r}" for s, r, _ in task.evidences], task.golden_answers[0], "gold:evidence")


def _from_supporting_titles(task: Task, title_of: Callable[[str], str]) -> ReferencePlan | None:
    titles = [title_of(pid) for pid in task.supporting_ids]
    titles = [t for t in titles if t]
    if not titles:
        return None
    return _sequence(task.id, titles, task.golden_answers[0], "gold:supporting_titles")


def _from_subject(task: Task, title_of: Callable[[str], str]) -> ReferencePlan | None:
    subject, relation = task.meta.get("subject"), task.meta.get("relation")
    if not isinstance(subject, str) or not subject.strip():
        return None
    query = f"{subject} {relation}" if isinstance(relation, str) and relation else subject
    return _sequence(task.id, [query], task.golden_answers[0], "gold:subject")


#: gold builders in order of preference (the richest structure first)
GOLD_BUILDERS: tuple[tuple[str, Callable[[Task, Callable[[str], str]], ReferencePlan | None]], ...] = (
    ("decomposition", _from_decomposition),
    ("evidence", _from_evidence),
    ("subject", _from_subject),
    ("supporting_titles", _from_supporting_titles),
)


def from_gold(task: Task, title_of: Callable[[str], str]) -> ReferencePlan | None:
    """The first gold structure the task has (see :data:`GOLD_BUILDERS`); ``title_of`` maps a passage id to its
    title (``""`` when unknown). Tasks whose answer is not in the corpus get none: the plan could not work."""
    if not task.answerable_in_corpus:
        return None
    for _, build in GOLD_BUILDERS:
        seq = build(task, title_of)
        if seq is not None:
            return seq
    return None
