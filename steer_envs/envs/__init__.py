"""The search environments (steering, planning, verification supervise a frozen executor; GuidedSearch trains the
searcher itself) and their helpers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .catalogue import CATALOGUES, HANDOFF, PLANNING, STEERING, VERIFICATION, InterventionTemplate
from .registration import ENVS, env_ids, register_envs
from .spaces import AnyText


def observation_text(obs: Mapping[str, Any]) -> str:
    """``O(g, s_t)`` as one string: the form a language-model steerer reads."""
    parts = [f"Goal: {obs['goal']}", f"Turn: {int(obs['turn'])}  Interventions so far: {int(obs['interventions'])}"]
    if "proposed_answer" in obs:
        parts.append(f"Proposed answer: {obs['proposed_answer']}")
    if "sender" in obs:  # the hand-off env: its transcript ends with the current hand-off
        from ..executors.pipeline import RECEIVERS, ROLES

        parts.append(f"Current hand-off: {ROLES[int(obs['sender'])]} -> {RECEIVERS[int(obs['receiver'])]}")
    transcript = str(obs.get("transcript", ""))
    parts.append("Transcript so far:\n" + (transcript if transcript.strip() else "(empty)"))
    return "\n".join(parts)


def __getattr__(name: str):  # the env classes import gymnasium/numpy machinery; load them on first use
    if name in ("SearchEnv", "EnvConfig"):
        from . import base

        return getattr(base, name)
    if name == "SearchTaskEnv":  # the base of SearchEnv and GuidedSearchEnv
        from .task_env import SearchTaskEnv

        return SearchTaskEnv
    if name == "SearchSteeringEnv":
        from .steering import SearchSteeringEnv

        return SearchSteeringEnv
    if name == "SearchPlanningEnv":
        from .planning import SearchPlanningEnv

        return SearchPlanningEnv
    if name == "GuidedSearchEnv":
        from .guided import GuidedSearchEnv

        return GuidedSearchEnv
    if name == "SearchVerificationEnv":
        from .verification import SearchVerificationEnv

        return SearchVerificationEnv
    if name == "HandoffSteeringEnv":
        from .handoff import HandoffSteeringEnv

        return HandoffSteeringEnv
    if name == "HandoffPipelineAEC":
        from .handoff_aec import HandoffPipelineAEC

        return HandoffPipelineAEC
    raise AttributeError(name)


__all__ = [
    "CATALOGUES",
    "ENVS",
    "HANDOFF",
    "PLANNING",
    "STEERING",
    "VERIFICATION",
    "AnyText",
    "InterventionTemplate",
    "env_ids",
    "observation_text",
    "register_envs",
    "SearchTaskEnv",
    "SearchEnv",
    "SearchSteeringEnv",
    "SearchPlanningEnv",
    "SearchVerificationEnv",
    "GuidedSearchEnv",
    "HandoffSteeringEnv",
    "HandoffPipelineAEC",
]
