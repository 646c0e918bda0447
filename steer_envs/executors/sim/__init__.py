"""The simulated searcher (executor spec ``sim:<profile>`` or ``sim:/path/to/profile.json``)."""

from __future__ import annotations

from ..base import ExecutorContext
from .hops import Hop, build_hops
from .kinds import KindDriftSearcher
from .profile import (
    DRIFT_KINDS,
    DRIFT_MODES,
    DYNAMICS,
    PROFILE_DIR,
    SimProfile,
    load_profile,
    profile_from_dict,
    shipped_profiles,
)
from .searcher import SimSearcher

#: a profile's ``dynamics`` -> the searcher class that plays it out
SEARCHERS: dict[str, type[SimSearcher]] = {"classic": SimSearcher, "kinds": KindDriftSearcher}


def make_sim_executor(arg: str, ctx: ExecutorContext) -> SimSearcher:
    """Factory registered for the ``sim`` kind."""
    profile = load_profile(arg or "default")
    return SEARCHERS[profile.dynamics](f"sim:{arg or 'default'}", profile, ctx)


__all__ = [
    "DRIFT_KINDS",
    "DRIFT_MODES",
    "DYNAMICS",
    "PROFILE_DIR",
    "SEARCHERS",
    "Hop",
    "KindDriftSearcher",
    "SimProfile",
    "SimSearcher",
    "build_hops",
    "load_profile",
    "make_sim_executor",
    "profile_from_dict",
    "shipped_profiles",
]
