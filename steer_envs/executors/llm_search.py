"""LLM search executors: the Search-R1 / ASearcher loop on any model backend.

Each turn the model continues ``prompt + transcript`` until it closes a ``</search>`` or ``</answer>``; a search
is run on the configured :class:`~steer_envs.retrieval.base.Retriever` and its results are appended as an
``<information>`` block; an output with no valid action gets Search-R1's invalid-action reply. Supervision
enters the context as text (``render_guidance`` / ``render_rejection``), exactly where the next turn will read it.

Specs (``make_executor``): ``hf:<folder|gemma-3-270m>``, ``llamacpp:<file.gguf|gemma-3-270m>``,
``openai:<model>@<base_url>``. Settings may follow a ``?`` as ``key=value`` pairs, e.g.
``hf:gemma-3-270m?max_new_tokens=48&template=few-shot`` or ``openai:qwen@http://127.0.0.1:8000/v1?timeout=30``;
keys are :class:`LLMSearchSettings` fields or options of the backend. Instruct models get their chat template
(``chat_template=auto|on|off``, :mod:`steer_envs.executors.chat`): the prompt is the user message and the
transcript continues as the assistant's unfinished message, as in Search-R1's inference; base models keep the raw
text. A served instruct model: ``openai:Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1?chat_template=on`` (vLLM /
SGLang render it), or ``...?tokenizer=/models/Qwen2.5-7B-Instruct`` (rendered here, sent as a completion).
``ExecutorContext.extra`` may carry the same keys (the spec wins), and ``extra["backend"]`` may hold a ready
:class:`~steer_envs.llm.base.LLMBackend`.

A backend (or retriever) that fails after its retries ends the episode as ``failed`` with the reason and its
source; the env truncates the episode and records both (:mod:`steer_envs.failures`), rather than crashing a long
vectorised run or scoring the failure as a 0 answer. A transcript that outgrows the model's context is the opposite
case: the backend raises :class:`~steer_envs.llm.base.ContextOverflowError` (the served model's 400, or the ``hf:``
backend's own check; the context comes from ``?max_model_len=`` / ``GET /v1/models`` or the model's config), and the
episode ends as a *scored* truncation without an answer (``info["truncation"] = "context"``), as Search-R1 scores an
agent that talks past its context: an outcome that evaluations keep in their means, not a failure they drop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..data.records import Task
from ..errors import SteerEnvsError
from ..llm.base import Generation, GenerationConfig, LLMBackend, LLMBackendError
from ..llm.registry import make_backend, split_spec_options
from ..retrieval.base import Hit, Retriever
from ..retrieval.cache import cached_search, search_key
from .base import Executor, ExecutorContext, Intervention, TurnResult
from .chat import CHAT_TEMPLATE_MODES, ChatFormat, resolve_chat_format
from .prompts import get_prompt_template
from .protocol import (
    ANSWER_STOP,
    INVALID_ACTION_REPLY,
    SEARCH_STOP,
    STOP_SEQUENCES,
    parse_action,
    render_guidance,
    render_information,
    render_rejection,
)


@dataclass(frozen=True)
class LLMSearchSettings:
    """How the executor prompts and samples. ``temperature`` 0 is greedy; forks given a new seed diverge only
    when sampling.

    ``chat_template``: ``auto`` (the model's chat template when its tokenizer has one, else the raw text), ``on``
    or ``off`` (``true`` / ``false`` read as on / off); ``tokenizer``: a local folder whose tokenizer's template
    renders the chat (a served model's tokenizer, for ``openai:``). See :mod:`steer_envs.executors.chat`."""

    template: str = "search-r1"
    max_new_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.95
    chat_template: str = "auto"
    tokenizer: str | None = None

    def __post_init__(self) -> None:
        get_prompt_template(self.template)  # fail fast on an unknown template, listing the valid ones
        if isinstance(self.chat_template, bool):  # ?chat_template=true arrives as a bool
            object.__setattr__(self, "chat_template", "on" if self.chat_template else "off")
        if self.chat_template not in CHAT_TEMPLATE_MODES:
            raise SteerEnvsError(
                f"chat_template must be one of {', '.join(CHAT_TEMPLATE_MODES)}, got {self.chat_template!r}"
            )
        if self.tokenizer is not None:
            object.__setattr__(self, "tokenizer", str(self.tokenizer))
        GenerationConfig(self.max_new_tokens, self.temperature, self.top_p)  # same checks as generation


#: defaults for packaged models (a 270M base model needs demonstrations and short turns on CPU, and the raw text)
PACKAGED_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma-3-270m": {"template": "few-shot", "max_new_tokens": 64, "chat_template": "off"}
}

_SETTING_KEYS = {f.name for f in fields(LLMSearchSettings)}


class LLMSearchExecutor(Executor):
    """The search loop around an :class:`LLMBackend`; forks share the backend, retriever and chat format, not the
    context. ``chat_format`` (how prompt and transcript reach the model) is resolved from the settings when not
    given."""

    deterministic = False

    def __init__(
        self,
        spec: str,
        backend: LLMBackend,
        settings: LLMSearchSettings,
        retriever: Retriever | str = "bm25s",
        data_dir: str | None = None,
        max_turns: int = 10,
        topk: int = 3,
        chat_format: ChatFormat | None = None,
    ) -> None:
        super().__init__(spec, max_turns=max_turns)
        self.backend = backend
        self.settings = settings
        self.template = get_prompt_template(settings.template)
        self.chat_format = chat_format or resolve_chat_format(settings.chat_template, backend, settings.tokenizer)
        self.topk = topk
        self._retriever = retriever
        #: the retriever's spec, which keys its results in the process's search cache (a retriever object handed in
        #: is searched directly: nothing says two such objects answer alike)
        self._retriever_spec = retriever if isinstance(retriever, str) else None
        self._data_dir = data_dir
        self._seed: int | None = None

    @property
    def retriever(self) -> Retriever:
        """Built on first search (shared per process), so a failing backend never pays for an index load."""
        if isinstance(self._retriever, str):
            from ..retrieval.registry import make_retriever

            self._retriever = make_retriever(self._retriever, data_dir=self._data_dir)
        return self._retriever

    def _search(self, query: str) -> Sequence[Hit]:
        """The top ``topk`` hits, through the process's search cache (:mod:`steer_envs.retrieval.cache`, as every
        simulated episode's search): an evaluation repeats its queries across seeds and a GRPO group across its
        samples, and a BM25 search is the largest share of a served step's client CPU."""
        if self._retriever_spec is None:
            return self.retriever.search(query, k=self.topk)
        return cached_search(self.retriever, search_key(self._retriever_spec, self._data_dir), query, self.topk)

    @property
    def context(self) -> str:
        """What the model reads next: the prompt, then everything generated and inserted so far (in chat mode,
        rendered with the chat template: the prompt as the user message, the transcript as the open assistant turn)."""
        return self.chat_format.context(self.prompt, self.transcript)

    def reseed(self, seed: int) -> None:
        """Re-seed future sampling (independent continuations of forks)."""
        self._seed = int(seed)

    # -- Executor hooks ------------------------------------------------------------------------------------
    def _reset(self, task: Task, seed: int | None) -> None:
        self.prompt = self.template.render(task.question)
        self._seed = seed

    def _generation_config(self) -> GenerationConfig:
        seed = None if self._seed is None else (self._seed * 1_000_003 + self.stats.turns) % (2**31 - 1)
        s = self.settings
        stops = STOP_SEQUENCES + self.template.extra_stops
        return GenerationConfig(s.max_new_tokens, s.temperature, s.top_p, stop=stops, seed=seed)

    def _turn(self) -> TurnResult:
        try:
            gen = self.chat_format.generate(self.backend, self.prompt, self.transcript, self._generation_config())
        except LLMBackendError as exc:
            return TurnResult("failed", segment="", error=str(exc), source="backend")
        segment = gen.text + closing_tag(gen)
        action = parse_action(segment)
        if action.kind == "search":
            assert action.query is not None, "parse_action gives every search its query"
            try:
                hits = self._search(action.query)
            except SteerEnvsError as exc:
                return TurnResult(
                    "failed",
                    segment,
                    query=action.query,
                    tokens=gen.tokens,
                    error=f"retrieval failed for query {action.query!r}: {exc}",
                    source="retrieval",
                )
            return TurnResult("search", segment, render_information(hits), query=action.query, tokens=gen.tokens)
        if action.kind == "answer":
            return TurnResult("answer", segment, answer=action.answer, tokens=gen.tokens)
        return TurnResult("invalid", segment, INVALID_ACTION_REPLY, tokens=gen.tokens)

    def _receive(self, intervention: Intervention) -> None:
        render = render_rejection if intervention.kind == "reject" else render_guidance
        self.transcript += render(intervention.text)

    def _blank_copy(self) -> LLMSearchExecutor:
        return LLMSearchExecutor(
            self.spec,
            self.backend,
            self.settings,
            self._retriever if self._retriever_spec is None else self._retriever_spec,
            self._data_dir,
            self.max_turns,
            self.topk,
            self.chat_format,
        )

    def _get_impl_state(self) -> Any:
        return {"seed": self._seed}

    def _set_impl_state(self, state: Any) -> None:
        self._seed = state["seed"]


_OPEN_TAG = re.compile(r"<(search|answer)>")


def closing_tag(gen: Generation) -> str:
    """The closing tag the model emitted (servers leave the stop string out of the text), so the segment reads
    as written.

    Backends that report which protocol stop matched give it directly; otherwise a ``stop`` finish (an
    unreported stop, a template's extra stop, or end of sequence) after an unclosed ``<search>`` /
    ``<answer>`` closes that tag: the model had finished the action.
    """
    if gen.stop_sequence in STOP_SEQUENCES:
        return gen.stop_sequence
    if gen.finish_reason != "stop":
        return ""
    opened = list(_OPEN_TAG.finditer(gen.text))
    if not opened:
        return ""
    last = opened[-1]
    closing = SEARCH_STOP if last.group(1) == "search" else ANSWER_STOP
    return "" if closing in gen.text[last.end() :] else closing


# -- spec parsing and factories -------------------------------------------------------------------------------
def _build(kind: str, arg: str, ctx: ExecutorContext) -> LLMSearchExecutor:
    target, spec_options = split_spec_options(arg)
    base_name = target.partition("@")[0] if kind == "openai" else target
    options: dict[str, Any] = dict(PACKAGED_DEFAULTS.get(base_name, {}) if kind != "openai" else {})
    options.update({k: v for k, v in ctx.extra.items() if k not in ("backend", "backend_options")})
    options.update(spec_options)
    settings = LLMSearchSettings(**{k: v for k, v in options.items() if k in _SETTING_KEYS})
    backend_options = dict(ctx.extra.get("backend_options", {}))
    backend_options.update({k: v for k, v in options.items() if k not in _SETTING_KEYS})
    backend = ctx.extra.get("backend")
    if backend is None:
        backend = make_backend(f"{kind}:{target}", **backend_options)
    return LLMSearchExecutor(
        f"{kind}:{arg}",
        backend,
        settings,
        retriever=ctx.retriever,
        data_dir=ctx.data_dir,
        max_turns=ctx.max_turns,
        topk=ctx.topk,
    )


def make_hf_executor(arg: str, ctx: ExecutorContext) -> LLMSearchExecutor:
    """``hf:<folder|gemma-3-270m>[?key=value&...]``: a transformers model on this machine."""
    return _build("hf", arg, ctx)


def make_llamacpp_executor(arg: str, ctx: ExecutorContext) -> LLMSearchExecutor:
    """``llamacpp:<file.gguf|gemma-3-270m>[?key=value&...]`` (needs the llamacpp extra)."""
    return _build("llamacpp", arg, ctx)


def make_openai_executor(arg: str, ctx: ExecutorContext) -> LLMSearchExecutor:
    """``openai:<model>@<base_url>[?key=value&...]``: any OpenAI-compatible server."""
    return _build("openai", arg, ctx)


__all__ = [
    "LLMSearchExecutor",
    "LLMSearchSettings",
    "closing_tag",
    "make_hf_executor",
    "make_llamacpp_executor",
    "make_openai_executor",
]
