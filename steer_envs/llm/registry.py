"""Backend construction from a spec string ``<kind>:<argument>`` (same grammar as executor specs).

Loaded models are heavy, so by default one backend instance per (spec, options) is shared within a process:
ten vectorised envs on ``hf:gemma-3-270m`` hold one copy of the weights.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from ..errors import SteerEnvsError
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


def _coerce(value: str) -> Any:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def split_spec_options(arg: str) -> tuple[str, dict[str, Any]]:
    """``"gemma-3-270m?max_new_tokens=48&template=few-shot"`` -> ``("gemma-3-270m", {...})``."""
    target, sep, query = arg.partition("?")
    options: dict[str, Any] = {}
    if sep:
        for pair in filter(None, query.split("&")):
            key, eq, value = pair.partition("=")
            if not eq or not key:
                raise SteerEnvsError(f"spec option {pair!r} must look like key=value (in {arg!r})")
            options[key] = _coerce(value)
    return target, options


def make_backend(spec: str, shared: bool = True, **options: Any) -> LLMBackend:
    """Build (or reuse, with ``shared=True``) the backend ``spec`` names, e.g. ``make_backend("hf:gemma-3-270m")``.

    ``options`` go to the backend (``OpenAIOptions`` fields for ``openai:``, ``device``/``dtype`` for ``hf:``); the
    spec may carry them too, after ``?`` (``openai:m@http://127.0.0.1:8000/v1?timeout=30&max_retries=2``), and a
    keyword wins over the spec.
    """
    kind, arg = parse_backend_spec(spec)
    arg, spec_options = split_spec_options(arg)  # ``openai:m@URL?timeout=30``: options in the spec, as executors take
    options = {**spec_options, **options}
    key = (f"{kind}:{arg}", json.dumps(options, sort_keys=True, default=str))
    with _LOCK:
        if shared and key in _INSTANCES:
            return _INSTANCES[key]
        backend = BACKENDS.resolve(kind)(arg, **options)
        if shared:
            _INSTANCES[key] = backend
        return backend


def _openai_in_flight(options: dict[str, Any]) -> int:
    from .openai_client import OpenAIOptions

    if "max_in_flight" not in options:
        return OpenAIOptions.max_in_flight
    return OpenAIOptions(max_in_flight=int(options["max_in_flight"])).max_in_flight  # validated as the backend does


#: ``kind -> (options -> the most requests a backend of that kind keeps in flight)``, for kinds that wait on a server
IN_FLIGHT_BOUNDS: dict[str, Callable[[dict[str, Any]], int]] = {"openai": _openai_in_flight}


def in_flight_bound(spec: str, **options: Any) -> int | None:
    """The most requests the backend ``spec`` built with ``options`` keeps in flight at once (``openai:``: its
    ``max_in_flight``, ``OpenAIOptions``' default unless set), or None for a kind that runs in this process.

    Why: a pool that keeps one episode in flight per thread sizes itself by what the backend lets reach the
    server; fewer threads would leave the server's slots idle, more would only queue on the backend's bound.
    Options the backend does not read (an executor's sampling settings) are ignored."""
    kind, _ = parse_backend_spec(spec)
    bound = IN_FLIGHT_BOUNDS.get(kind)
    return None if bound is None else bound(options)


def clear_backend_cache() -> None:
    """Forget shared backends (tests; freeing memory)."""
    with _LOCK:
        _INSTANCES.clear()
