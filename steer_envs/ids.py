"""The registered environment ids, as constants: one spelling of each id for the whole project.

Import these instead of writing ``"steer_envs/..."`` by hand (a typo in a literal fails only when the env is made;
a typo in a constant's name fails at import). :mod:`steer_envs.envs.registration` registers exactly these ids.
"""

from __future__ import annotations

NAMESPACE = "steer_envs"

STEERING_ENV = f"{NAMESPACE}/SearchSteering-v0"
PLANNING_ENV = f"{NAMESPACE}/SearchPlanning-v0"
VERIFICATION_ENV = f"{NAMESPACE}/SearchVerification-v0"
GUIDED_SEARCH_ENV = f"{NAMESPACE}/GuidedSearch-v0"
HANDOFF_ENV = f"{NAMESPACE}/HandoffSteering-v0"

ENV_IDS: tuple[str, ...] = (STEERING_ENV, PLANNING_ENV, VERIFICATION_ENV, GUIDED_SEARCH_ENV, HANDOFF_ENV)

__all__ = [
    "ENV_IDS",
    "GUIDED_SEARCH_ENV",
    "HANDOFF_ENV",
    "NAMESPACE",
    "PLANNING_ENV",
    "STEERING_ENV",
    "VERIFICATION_ENV",
]
