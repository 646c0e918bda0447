"""Registry of steering backbones: ``config.backbone`` -> constructor (no if/elif chains in the trainer)."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from steer_envs.errors import unknown_name

from .interventions import InterventionOption
from .steerer import Steerer

BACKBONES: dict[str, str] = {
    "encoder": "agents.steering.encoder:EncoderSteerer",
    "causal_lm": "agents.steering.causal_lm:CausalLMSteerer",
}


def backbone_class(kind: str) -> Callable[..., Steerer]:
    if kind not in BACKBONES:
        raise unknown_name("steering backbone", kind, list(BACKBONES))
    module, _, name = BACKBONES[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def build_steerer(kind: str, options: Sequence[InterventionOption], args: dict[str, Any]) -> Steerer:
    return backbone_class(kind)(options, **args)
