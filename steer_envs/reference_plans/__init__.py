"""ACTGUIDE-RL's reference plans: what another agent (or a task's gold structure) did on a task, given to a learner
as a hint on GuidedSearch-v0.

Why this name: "guidance" in the suite means a *steering note* (what a steerer sends a running agent:
``render_guidance``, the catalogue's notes). What ACTGUIDE-RL shows a learner is a plan, so it is named after what
it holds, a reference plan.

* :class:`ReferencePlan` (a task's plan: its actions, answer, source), :class:`PlanAction` (one ``search`` /
  ``answer`` step), :class:`ReferencePlans` (the plans of a set of tasks) and :func:`load_reference_plans`;
* :func:`format_plan_hint` / :func:`parse_plan_hint` (the first ``k`` actions as the prompt's numbered hint);
* :func:`inject_noise` (a share of a plan's actions replaced by plausible wrong ones).

``load_reference_plans(...).reference(task_id)`` gives a task's :class:`ReferencePlan` (a successful real rollout's
queries and answer, or the task's gold structure). The env's and the ACTGUIDE-RL config's option keys carry the
same name: ``plan_k`` (how many plan actions the hint shows), ``plan_mode`` (``prompt``: a hint; ``prefix``: the
plan's searches executed), ``plan_sources``, ``plan_noise``, ``plan_noise_seed`` and ``plan_answers``. The wrapper
that decides each episode's ``k`` is :class:`steer_envs.wrappers.ReferencePlanHint`.
"""

from .hint import HINT_HEADER, format_plan_hint, hint_lines, parse_plan_hint
from .noise import distractor_titles, inject_noise
from .records import ACTION_NAMES, ANSWER, SEARCH, PlanAction, ReferencePlan
from .sources import from_gold, from_rollout, from_rollouts
from .store import SOURCE_KINDS, ReferencePlans, load_reference_plans, source_kind

__all__ = [
    "ACTION_NAMES",
    "ANSWER",
    "HINT_HEADER",
    "SEARCH",
    "SOURCE_KINDS",
    "PlanAction",
    "ReferencePlan",
    "ReferencePlans",
    "distractor_titles",
    "format_plan_hint",
    "from_gold",
    "from_rollout",
    "from_rollouts",
    "hint_lines",
    "inject_noise",
    "load_reference_plans",
    "parse_plan_hint",
    "source_kind",
]
