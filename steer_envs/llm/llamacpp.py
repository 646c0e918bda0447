"""The llama.cpp backend: ``llamacpp:<file.gguf>`` (optional extra ``steer-envs[llamacpp]``).

llama.cpp runs GGUF models natively (no de-quantisation), so it is the fastest CPU path for users who have it.
``llamacpp:gemma-3-270m`` uses the packaged Gemma GGUF.

``context_length`` is ``n_ctx`` (the context llama.cpp allocated); llama.cpp refuses a longer request with a
``ValueError`` ("Requested tokens (N) exceed context window of M"), which becomes
:class:`~steer_envs.llm.base.ContextOverflowError` (an outcome for the executor, not a failure).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import SteerEnvsError
from .base import (
    BackendStats,
    ContextOverflowError,
    FinishReason,
    Generation,
    GenerationConfig,
    check_prompts,
    is_context_overflow_message,
    match_candidates,
)


def _completion(llm: Any, name: str, prompt: str, **kwargs: Any) -> dict:
    """``llm.create_completion``, with llama.cpp's context-window refusal raised as :class:`ContextOverflowError`."""
    try:
        return llm.create_completion(prompt, **kwargs)
    except ValueError as exc:
        if is_context_overflow_message(str(exc)):
            raise ContextOverflowError(f"{name}: {exc}") from exc
        raise


class LlamaCppBackend:
    """An :class:`~steer_envs.llm.base.LLMBackend` over ``llama_cpp.Llama`` (calls serialised by a lock)."""

    def __init__(
        self,
        model_path: str | Path,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise SteerEnvsError(
                "llamacpp: executors need llama-cpp-python: pip install 'steer-envs[llamacpp]'"
            ) from exc
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise SteerEnvsError(f"llamacpp:{model_path}: no such .gguf file; give the path of a GGUF model file")
        self.name = name or f"llamacpp:{model_path}"
        self.llm = Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, logits_all=True, verbose=False
        )
        self.stats = BackendStats()
        self.lock = threading.Lock()
        #: tokens a prompt and its generation may take together (llama.cpp's allocated context)
        self.context_length: int = int(n_ctx)

    def generate(self, prompts: Sequence[str], config: GenerationConfig) -> list[Generation]:
        out = []
        for prompt in check_prompts(prompts):
            with self.lock:
                reply = _completion(
                    self.llm,
                    self.name,
                    prompt,
                    max_tokens=config.max_new_tokens,
                    temperature=config.temperature,
                    top_p=config.top_p,
                    stop=list(config.stop) or None,
                    seed=config.seed,
                )
            choice = reply["choices"][0]
            tokens = int(reply.get("usage", {}).get("completion_tokens", 0))
            reason: FinishReason = "length" if choice.get("finish_reason") == "length" else "stop"
            out.append(Generation(choice["text"], tokens, reason))
            self.stats.generated_tokens += tokens
        self.stats.calls += 1
        self.stats.prompts += len(out)
        return out

    def top_logprobs(self, prompts: Sequence[str], k: int) -> list[dict[str, float]]:
        out = []
        for prompt in check_prompts(prompts):
            with self.lock:
                reply = _completion(self.llm, self.name, prompt, max_tokens=1, temperature=0.0, logprobs=k)
            out.append({str(t): float(v) for t, v in reply["choices"][0]["logprobs"]["top_logprobs"][0].items()})
        return out

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> list[dict[str, float]]:
        if not candidates:
            raise SteerEnvsError("next_token_logprobs needs at least one candidate string, e.g. ['yes', 'no']")
        return [match_candidates(t, candidates) for t in self.top_logprobs(prompts, 20)]


def load_llamacpp_backend(arg: str, **options: Any) -> LlamaCppBackend:
    from .packaged import PACKAGED_GGUF

    unknown = sorted(set(options) - {"n_ctx", "n_threads", "seed"})
    if unknown:
        raise SteerEnvsError(f"unknown llamacpp backend option(s) {unknown}; valid: n_ctx, n_threads, seed")
    if arg in PACKAGED_GGUF:
        return LlamaCppBackend(PACKAGED_GGUF[arg](), name=f"llamacpp:{arg}", **options)
    if not arg:
        raise SteerEnvsError(
            "llamacpp: needs a .gguf file, e.g. llamacpp:/models/qwen2.5-7b-q4_k_m.gguf or llamacpp:gemma-3-270m"
        )
    return LlamaCppBackend(arg, **options)
