"""Renamed options: an old keyword keeps working, with a ``DeprecationWarning`` that names the new one.

Why a module: an option's name lives in more places than the code that defines it: ``gymnasium.make`` calls,
``reset(options=...)`` dicts, JSON/TOML config files and run folders written before a rename. Each of those places
routes old names through :func:`rename_options`, and a config dataclass gets the same behaviour in its constructor,
its attributes and its pickles from :func:`renamed_options`, so a rename never breaks a caller or a saved run.

:data:`PLAN_OPTION_RENAMES` is the one rename so far: ACTGUIDE's reference-plan options were named ``guidance_*``
("guidance" now means a steering note only; :mod:`steer_envs.reference_plans`).
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any

from .errors import SteerEnvsError

#: old option name -> new name: GuidedSearch-v0's reference-plan options (and the ACTGUIDE-RL config's copies)
PLAN_OPTION_RENAMES: dict[str, str] = {
    "guidance_k": "plan_k",
    "guidance_mode": "plan_mode",
    "guidance_sources": "plan_sources",
    "guidance_noise": "plan_noise",
    "guidance_noise_seed": "plan_noise_seed",
    "guidance_answers": "plan_answers",
}


def rename_options(options: Mapping[str, Any], renames: Mapping[str, str], where: str,
                   stacklevel: int = 3) -> dict[str, Any]:
    """``options`` with every old key of ``renames`` replaced by its new key, warning once per old key used.
    Both names of one option is an error (which value was meant is unknowable)."""
    out = dict(options)
    for old, new in renames.items():
        if old not in out:
            continue
        if new in out:
            raise SteerEnvsError(f"{where}: {old!r} is the deprecated name of {new!r}; pass only {new!r} "
                                 f"(dataclasses.replace passes every current field, so it takes only the new name)")
        warnings.warn(f"{where}: option {old!r} is deprecated, use {new!r} (same meaning)", DeprecationWarning,
                      stacklevel=stacklevel)
        out[new] = out.pop(old)
    return out


def _alias(old: str, new: str, owner: str, settable: bool) -> property:
    def get(self):
        warnings.warn(f"{owner}.{old} is deprecated, use {owner}.{new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    def set_(self, value):
        warnings.warn(f"{owner}.{old} is deprecated, use {owner}.{new}", DeprecationWarning, stacklevel=2)
        setattr(self, new, value)

    return property(get, set_ if settable else None, doc=f"Deprecated name of ``{new}``.")


def renamed_options(renames: Mapping[str, str]):
    """Class decorator for a dataclass whose fields were renamed (old -> new in ``renames``).

    The constructor (and so ``from_dict`` loaders and :func:`dataclasses.replace` with new names) takes the old
    keywords with a warning; the old attribute names read (and, unless frozen, write) the new fields with a warning;
    an instance pickled before the rename unpickles with its values under the new names. ``cls.renamed_options``
    holds the table, for loaders that check a file's keys."""

    def wrap(cls: type) -> type:
        init = cls.__init__
        frozen = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]

        @functools.wraps(init)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **rename_options(kwargs, renames, cls.__name__, stacklevel=3))

        def __setstate__(self, state: dict[str, Any]) -> None:
            for name, value in state.items():
                object.__setattr__(self, renames.get(name, name), value)

        cls.__init__ = __init__
        cls.__setstate__ = __setstate__
        for old, new in renames.items():
            setattr(cls, old, _alias(old, new, cls.__name__, settable=not frozen))
        cls.renamed_options = dict(renames)
        return cls

    return wrap


__all__ = ["PLAN_OPTION_RENAMES", "rename_options", "renamed_options"]
