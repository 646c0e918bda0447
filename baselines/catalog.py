"""Deprecated: the method list is :mod:`baselines.methods` (renamed so that it is not confused with
``steer_envs/envs/catalogue.py``, the intervention templates an env offers). Importing this module still works: it
re-exports the list and warns once."""
from __future__ import annotations

import warnings

from .methods import BUILTIN_METHODS  # noqa: F401  (re-exported)

warnings.warn("baselines.catalog is deprecated; the method list is baselines.methods (registered by "
              "baselines.registry)", DeprecationWarning, stacklevel=2)
