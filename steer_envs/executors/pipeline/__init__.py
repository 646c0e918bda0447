"""The five-role hand-off pipeline (planner, searcher, reader, verifier, summarizer) that HandoffSteering-v0
supervises: simulated roles with role-level drift, or LLM roles chosen per role by spec."""

from __future__ import annotations

from ..base import ExecutorContext
from .intents import HANDOFF, HANDOFF_INTENTS
from .messages import (
    FAIL,
    NO_ANSWER,
    PASS,
    RECEIVERS,
    ROLES,
    USER,
    Handoff,
    claimed_answer,
    parse_message,
    render_message,
)
from .pipeline import RIGHT_F1, Pipeline
from .profile import PROFILE_DIR, PipelineProfile, load_pipeline_profile, profile_from_dict, shipped_profiles


def make_pipeline(spec: str, context: ExecutorContext, roles: dict[str, str] | None = None) -> Pipeline:
    """``sim:<pipeline profile>`` (or ``sim:/path/profile.json``); ``roles`` swaps roles for LLM backends."""
    from ...errors import SteerEnvsError

    kind, _, arg = spec.partition(":")
    if kind != "sim":
        raise SteerEnvsError(
            f"HandoffSteering-v0 runs the simulated pipeline (executor='sim:<pipeline profile>', got {spec!r}); put "
            f"language models into single roles with roles={{'verifier': '{spec}'}}"
        )
    return Pipeline(f"sim:{arg or 'default'}", load_pipeline_profile(arg or "default"), context, roles)


__all__ = [
    "FAIL",
    "HANDOFF",
    "HANDOFF_INTENTS",
    "NO_ANSWER",
    "PASS",
    "PROFILE_DIR",
    "RECEIVERS",
    "RIGHT_F1",
    "ROLES",
    "USER",
    "Handoff",
    "Pipeline",
    "PipelineProfile",
    "claimed_answer",
    "load_pipeline_profile",
    "make_pipeline",
    "parse_message",
    "profile_from_dict",
    "render_message",
    "shipped_profiles",
]
