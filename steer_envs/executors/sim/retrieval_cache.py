"""Deprecated alias of :mod:`steer_envs.retrieval.cache` (the search-result cache is a retrieval concern; the
simulator, the pipeline roles and GuidedSearch-v0 all use it). Every name resolves to the same object there (the
cache and :data:`STATS` are shared, not copied), with a ``DeprecationWarning`` saying where it moved."""
from __future__ import annotations

import warnings
from typing import Any

from ...retrieval import cache as _cache

_NAMES = frozenset(_cache.__all__) | {"_CACHE", "_ENABLED", "_LOCK"}


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        warnings.warn(f"steer_envs.executors.sim.retrieval_cache.{name} moved to steer_envs.retrieval.cache.{name}; "
                      "import it from there", DeprecationWarning, stacklevel=2)
        return getattr(_cache, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(_NAMES)
