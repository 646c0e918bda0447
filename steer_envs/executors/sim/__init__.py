"""The simulated searcher (executor spec ``sim:<profile>`` or ``sim:/path/to/profile.json``)."""
from __future__ import annotations

from ..base import ExecutorContext
from .hops import Hop, build_hops
from .profile import DRIFT_MODES, PROFILE_DIR, SimProfile, load_profile, profile_from_dict, shipped_profiles
from .searcher import SimSearcher


def make_sim_executor(arg: str, ctx: ExecutorContext) -> SimSearcher:
    """Factory registered for the ``sim`` kind."""
    profile = load_profile(arg or "default")
    return SimSearcher(f"sim:{arg or 'default'}", profile, ctx)


__all__ = [
    "DRIFT_MODES", "PROFILE_DIR", "Hop", "SimProfile", "SimSearcher", "build_hops", "load_profile",
    "make_sim_executor", "profile_from_dict", "shipped_profiles",
]
