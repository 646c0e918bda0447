"""Optional extras: import a module that an extra provides, or say which extra to install.

Why: a bare ``ModuleNotFoundError: No module named 'peft'`` names neither the feature that needs it nor the
install line that brings it; users of an optional feature should read ``pip install "steer-envs[llm]"``."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import SteerEnvsError


class MissingExtraError(SteerEnvsError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def import_extra(module: str, extra: str, feature: str) -> ModuleType:
    """``importlib.import_module(module)``, or a :class:`MissingExtraError` naming ``feature`` and ``extra``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or module.split(".")[0] != exc.name.split(".")[0]:
            raise  # something the module itself imports is broken: not a missing extra
        raise MissingExtraError(
            f"{feature} needs {module!r}, which is not installed: pip install "
            f'"steer-envs[{extra}]" (or pip install {module.split(".")[0]})'
        ) from None
