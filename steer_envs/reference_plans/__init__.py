"""ACTGUIDE-RL's reference plans: what another agent (or a task's gold structure) did on a task, given to a learner
as a hint (GuidedSearch-v0).

Why this name: the word "guidance" meant two things in the suite, a *steering note* (what a steerer sends a
running agent: ``render_guidance``, the catalogue's notes, ``steer-envs guidance``) and an ACTGUIDE *reference
plan* (``steer_envs.guidance``, ``ActionGuidance``). The ACTGUIDE side is now named after what it holds, a
reference plan; "guidance" keeps its steering meaning. Import from here:

* :class:`ReferencePlan` (a task's plan: its actions, answer, source), :class:`PlanAction` (one ``search`` /
  ``answer`` step), :class:`ReferencePlans` (the plans of a set of tasks) and :func:`load_reference_plans`;
* :func:`format_plan_hint` / :func:`parse_plan_hint` (the first ``k`` actions as the prompt's numbered hint);
* :class:`ReferencePlanHint` (the wrapper that decides each episode's ``k``; :mod:`steer_envs.wrappers`).

The env's and the ACTGUIDE-RL config's option keys carry the same name: ``plan_k`` (how many plan actions the
hint shows), ``plan_mode`` (``prompt``: a hint; ``prefix``: the plan's searches executed), ``plan_sources``,
``plan_noise``, ``plan_noise_seed`` and ``plan_answers`` (also the ``reset(options=...)`` keys ``plan_k`` /
``plan_mode`` and ``info["plan_k"]`` / ``info["plan_mode"]``).

The old names (``steer_envs.guidance``: ``ReferenceSequence``, ``GuidanceAction``, ``ActionData``,
``load_action_data``, ``format_hint``; ``ActionGuidance``) are the same objects and keep working; the old option
keys (``guidance_k``, ``guidance_mode``, ``guidance_sources``, ``guidance_noise``, ``guidance_noise_seed``,
``guidance_answers``) work too, with a ``DeprecationWarning`` naming the new key, in ``gymnasium.make``, ``reset``
options, the configs and config files (:data:`steer_envs.deprecation.PLAN_OPTION_RENAMES`); run folders made before
the rename keep their fingerprints and resume.
"""
from ..guidance import (
    ACTION_NAMES,
    ANSWER,
    HINT_HEADER,
    SEARCH,
    SOURCE_KINDS,
    distractor_titles,
    from_gold,
    from_rollout,
    from_rollouts,
    hint_lines,
    inject_noise,
    source_kind,
)
from ..guidance import ActionData as ReferencePlans
from ..guidance import GuidanceAction as PlanAction
from ..guidance import ReferenceSequence as ReferencePlan
from ..guidance import format_hint as format_plan_hint
from ..guidance import load_action_data as load_reference_plans
from ..guidance import parse_hint as parse_plan_hint
from ..wrappers.guidance import ReferencePlanHint

__all__ = [
    "ACTION_NAMES", "ANSWER", "HINT_HEADER", "SEARCH", "SOURCE_KINDS", "PlanAction", "ReferencePlan",
    "ReferencePlanHint", "ReferencePlans", "distractor_titles", "format_plan_hint", "from_gold", "from_rollout",
    "from_rollouts", "hint_lines", "inject_noise", "load_reference_plans", "parse_plan_hint", "source_kind",
]
