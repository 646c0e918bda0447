"""The model-backend protocol shared by executors and agents.

Executors (the supervised searcher) and agents (the steerer, the ACTGUIDE learner) both talk to language models
through :class:`LLMBackend`, so any of them can run on transformers, llama.cpp or a remote OpenAI-compatible
server (vLLM, SGLang, Ollama) by changing a spec string. The protocol is deliberately small: batched generation
with stop sequences, and next-token log-probabilities of a few candidates (the steerer's fast path asks
"intervene? yes / no" and reads ``P(yes)`` without generating).

**Context limits.** Every backend says how many tokens its model reads at once (``context_length``: the prompt and
the tokens it is asked to generate together; None when unknown), and a prompt that does not fit raises
:class:`ContextOverflowError`. That error is deliberately *not* a :class:`~steer_envs.errors.ServiceError`: a
server that refuses a prompt longer than its model's context is working as it should, so the overflow is the
caller's outcome to handle (an executor ends its episode as a scored truncation; a steerer elides old turns and
asks again), never a failure to retry or to drop from a mean. :func:`is_context_overflow_message` is the one place
that recognises a server's wording of it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ..errors import ServiceError, SteerEnvsError

FinishReason = Literal["stop", "length"]


class LLMBackendError(ServiceError):
    """A model backend could not answer (server down, timeouts, bad replies) after its retries.

    The message names the backend (and URL for remote ones) and the last failure, so a user can fix it.
    """


class ContextOverflowError(SteerEnvsError):
    """A prompt and the tokens asked for do not fit the model's context (an outcome, not a service failure).

    Raised by the ``openai:`` backend when the server answers HTTP 400 with a context-length message
    (:func:`is_context_overflow_message`; never retried: the same prompt would be refused again) and by the ``hf:``
    backend when ``prompt tokens + max_new_tokens`` exceed its ``context_length`` (vLLM's own rule, so a model run
    here and the same model served by vLLM stop at the same turn). It derives from
    :class:`~steer_envs.errors.SteerEnvsError` only, not from :class:`LLMBackendError`: ``Executor.step`` turns a
    ``ServiceError`` into a failed episode that evaluations drop from their means, while an agent that talks past
    its context has *done* something, and is scored (Search-R1 scores it as an episode without an answer).
    The counts are set when the backend knows them."""

    def __init__(
        self,
        message: str,
        prompt_tokens: int | None = None,
        max_new_tokens: int | None = None,
        context_length: int | None = None,
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.max_new_tokens = max_new_tokens
        self.context_length = context_length


#: how servers word a prompt that outgrew the model's context (case-insensitive, whitespace-tolerant). vLLM:
#: "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens ...", "'max_tokens' or
#: 'max_completion_tokens' is too large: 256. This model's maximum context length is ...", "The decoder prompt
#: (length 3000) is longer than the maximum model length of 2048. Make sure that `max_model_len` is ...";
#: SGLang: "... is longer than the model's context length (2048 tokens)"; OpenAI: "context_length_exceeded";
#: llama.cpp: "the request exceeds the available context size", "Requested tokens (3000) exceed context window of
#: 2048".
CONTEXT_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"maximum\s+context\s+length",
        r"maximum\s+model\s+length",
        r"max_model_len",
        r"max_(completion_)?tokens\W.{0,80}?too\s+large",
        r"context_length_exceeded",
        r"(longer\s+than|exceeds?)\s+(the\s+)?(model's\s+|available\s+)?context\s+(length|size|window)",
    )
)


def is_context_overflow_message(text: str | None) -> bool:
    """Whether a server's error text says the prompt (plus the tokens asked for) outgrew the model's context.

    The one recogniser of these messages (see :data:`CONTEXT_OVERFLOW_PATTERNS` for the wordings it accepts): the
    ``openai:`` backend applies it to HTTP 400 replies only, so a message that merely mentions a length elsewhere is
    never taken for an overflow. Tolerant on purpose: servers and their versions word it differently, and a missed
    overflow would make a finished episode look like a failed one."""
    if not text:
        return False
    flat = " ".join(str(text).split())
    return any(p.search(flat) for p in CONTEXT_OVERFLOW_PATTERNS)


def context_length_of(backend: object) -> int | None:
    """``backend.context_length`` when the backend knows it (a positive int), else None (also for backends written
    before the attribute existed)."""
    value = getattr(backend, "context_length", None)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling settings for one batched ``generate`` call.

    ``temperature <= 0`` means greedy decoding. ``stop`` strings end a generation; the returned text excludes
    the stop string (as OpenAI-compatible servers do) and :attr:`Generation.stop_sequence` names the one hit.
    ``seed`` makes sampling repeatable on backends that support it (same machine, same batch).
    """

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise SteerEnvsError(f"max_new_tokens must be a positive integer, got {self.max_new_tokens!r}")
        if self.temperature < 0:
            raise SteerEnvsError(f"temperature must be >= 0 (0 = greedy), got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise SteerEnvsError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if isinstance(self.stop, str):  # a lone string is a common slip: treat it as one stop sequence
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0


@dataclass(frozen=True)
class Generation:
    """One completion: ``text`` (without the stop string), generated token count, and why it ended."""

    text: str
    tokens: int
    finish_reason: FinishReason
    stop_sequence: str | None = None


@runtime_checkable
class LLMBackend(Protocol):
    """What every backend offers. All methods are batched: one result per prompt, in order.

    ``context_length``: tokens the model reads at once (prompt plus generated tokens), or None when unknown; read
    it with :func:`context_length_of`, which also answers None for a backend without the attribute. A prompt that
    does not fit raises :class:`ContextOverflowError`. Backends that can count a prompt's tokens (``hf:``) also
    offer ``count_prompt_tokens(prompt) -> int``, counted as ``generate`` feeds it."""

    name: str
    context_length: int | None

    def generate(self, prompts: Sequence[str], config: GenerationConfig) -> list[Generation]: ...

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> list[dict[str, float]]:
        """Log-probability that the next token is each candidate (matched with or without a leading space)."""
        ...

    def top_logprobs(self, prompts: Sequence[str], k: int) -> list[dict[str, float]]:
        """The ``k`` most likely next tokens (decoded text -> log-probability) for each prompt."""
        ...


@dataclass
class BackendStats:
    """Counters a backend keeps (calls, tokens, retries) for reports and benchmarks."""

    calls: int = 0
    prompts: int = 0
    generated_tokens: int = 0
    retries: int = 0
    failures: int = 0
    extra: dict[str, float] = field(default_factory=dict)


def truncate_at_stop(text: str, stops: Sequence[str]) -> tuple[str, str | None]:
    """Cut ``text`` before the earliest stop string; return (text, stop found or None)."""
    best: tuple[int, str] | None = None
    for stop in stops:
        if not stop:
            continue
        i = text.find(stop)
        if i >= 0 and (best is None or i < best[0]):
            best = (i, stop)
    if best is None:
        return text, None
    return text[: best[0]], best[1]


def logsumexp(values: Sequence[float]) -> float:
    finite = [v for v in values if v != -math.inf]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(v - top) for v in finite))


def match_candidates(top: dict[str, float], candidates: Sequence[str]) -> dict[str, float]:
    """Read candidate log-probs out of a top-k next-token table (remote backends only see the top k).

    A candidate matches a token equal to it after stripping whitespace (so ``"yes"`` collects ``"yes"`` and
    ``" yes"``). A candidate absent from the table gets the smallest listed log-prob: an upper bound on its
    true value, which keeps ratios like ``P(yes) / (P(yes) + P(no))`` finite.
    """
    floor = min(top.values()) if top else -math.inf
    out: dict[str, float] = {}
    for cand in candidates:
        key = cand.strip()
        hits = [lp for tok, lp in top.items() if tok.strip() == key]
        out[cand] = logsumexp(hits) if hits else floor
    return out


def check_prompts(prompts: Sequence[str]) -> list[str]:
    if isinstance(prompts, str):
        raise SteerEnvsError("prompts must be a list of strings (the API is batched); wrap a single prompt as [prompt]")
    out = list(prompts)
    for p in out:
        if not isinstance(p, str):
            raise SteerEnvsError(f"every prompt must be a string, got {type(p).__name__}")
    return out
