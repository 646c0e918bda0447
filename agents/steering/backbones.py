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
    "served": "agents.steering.served:ServedSteerer",  # evaluation only: an LLM behind an OpenAI-compatible server
}
#: which LLM backbone a model spec's kind needs (``openai:...`` -> served); any other spec is a local model folder
MODEL_BACKBONES: dict[str, str] = {"openai": "served"}
LOCAL_MODEL_BACKBONE = "causal_lm"


def backbone_class(kind: str) -> Callable[..., Steerer]:
    if kind not in BACKBONES:
        raise unknown_name("steering backbone", kind, list(BACKBONES))
    module, _, name = BACKBONES[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def backbone_for_model(model: str) -> str:
    """The backbone that runs an LLM ``model`` spec: ``openai:<name>@<url>`` -> ``served``; ``hf:...``, a packaged
    name or a folder -> ``causal_lm``."""
    kind, sep, _ = model.partition(":")
    return MODEL_BACKBONES.get(kind, LOCAL_MODEL_BACKBONE) if sep else LOCAL_MODEL_BACKBONE


def build_steerer(kind: str, options: Sequence[InterventionOption], args: dict[str, Any]) -> Steerer:
    return backbone_class(kind)(options, **args)
