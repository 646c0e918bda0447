"""Model backends shared by executors and agents: transformers, llama.cpp, OpenAI-compatible servers.

``make_backend("hf:gemma-3-270m")`` / ``make_backend("openai:<model>@<url>")`` give an :class:`LLMBackend`
(batched ``generate`` with stop sequences, ``next_token_logprobs`` of candidates). Heavy imports (torch,
transformers) happen only when a backend is built.
"""

from .base import (
    BackendStats,
    ContextOverflowError,
    Generation,
    GenerationConfig,
    LLMBackend,
    LLMBackendError,
    context_length_of,
    is_context_overflow_message,
    truncate_at_stop,
)
from .registry import BACKENDS, clear_backend_cache, make_backend, parse_backend_spec, register_backend

__all__ = [
    "BACKENDS",
    "BackendStats",
    "ContextOverflowError",
    "Generation",
    "GenerationConfig",
    "LLMBackend",
    "LLMBackendError",
    "clear_backend_cache",
    "context_length_of",
    "is_context_overflow_message",
    "make_backend",
    "parse_backend_spec",
    "register_backend",
    "truncate_at_stop",
]
