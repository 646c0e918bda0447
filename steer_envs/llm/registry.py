"""Backend construction from a spec string ``<kind>:<argument>`` (same grammar as executor specs).

Loaded models are heavy, so by default one backend instance per (spec, options) is shared within a process:
ten vectorised envs on ``hf:gemma-3-270m`` hold one copy of the weights.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from ..registry import LazyRegistry
from .base import LLMBackend

BackendFactory = Callable[..., LLMBackend]

BACKEND_SPEC_HELP = "hf:<folder|gemma-3-270m>, llamacpp:<file.gguf|gemma-3-270m>, openai:<model>@<base_url>"
BACKENDS: LazyRegistry[BackendFactory] = LazyRegistry("model backend", BACKEND_SPEC_HELP)
_INSTANCES: dict[tuple[str, str], LLMBackend] = {}
_LOCK = threading.Lock()



def register_backend(kind: str, factory: BackendFactory | str) -> None:
    """Register a kind; ``factory(arg, **options)`` may be given as ``"module:function"`` (imported lazily)."""
    BACKENDS.register(kind, factory)


register_backend("hf", "steer_envs.llm.hf:load_hf_backend")
register_backend("llamacpp", "steer_envs.llm.llamacpp:load_llamacpp_backend")
register_backend("openai", "steer_envs.llm.openai_client:load_openai_backend")


def parse_backend_spec(spec: str) -> tuple[str, str]:
    return BACKENDS.parse(spec)


def make_backend(spec: str, shared: bool = True, **options: Any) -> LLMBackend:
    """Build (or reuse, with ``shared=True``) the backend ``spec`` names, e.g. ``make_backend("hf:gemma-3-270m")``.

    ``options`` go to the backend (``OpenAIOptions`` fields for ``openai:``, ``device``/``dtype`` for ``hf:``).
    """
    kind, arg = parse_backend_spec(spec)
    key = (spec, json.dumps(options, sort_keys=True, default=str))
    with _LOCK:
        if shared and key in _INSTANCES:
            return _INSTANCES[key]
        backend = BACKENDS.resolve(kind)(arg, **options)
        if shared:
            _INSTANCES[key] = backend
        return backend


def clear_backend_cache() -> None:
    """Forget shared backends (tests; freeing memory)."""
    with _LOCK:
        _INSTANCES.clear()
