"""Chat templates for instruct executors, applied the way Search-R1's own inference applies them.

Search-R1's inference wraps the question prompt in the model's chat template when its tokenizer has one
(``tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
tokenize=False)``) and then appends every generated turn and ``<information>`` block to that text: the whole
search runs inside one *unfinished* assistant message, never closed by an end-of-turn token (the recorded
Search-R1 instruct rollouts in the shared data, ``search_r1_instruct``, start with exactly that text). Executors
get the same through the setting ``chat_template`` (:class:`~steer_envs.executors.llm_search.LLMSearchSettings`):

* ``auto`` (the default): chat mode when the model's tokenizer has a chat template (instruct models), completions
  mode (the raw prompt, as today) otherwise (base models). An ``openai:`` executor cannot read the server's
  tokenizer: it is in chat mode when ``tokenizer=<folder>`` names a local copy of the served model's tokenizer
  with a template, or when the backend is chat-only (``api=chat``).
* ``on``: chat mode, or a clear error when there is no chat template to apply.
* ``off``: completions mode (the prompt and transcript as raw text), whatever the tokenizer has.

In chat mode the question prompt is the user message and the transcript so far (turns, ``<information>`` blocks,
interventions) is the assistant's unfinished message. A :class:`ChatFormat` says how that reaches the model:

* :class:`TemplateFormat`: rendered here with a tokenizer's template, then sent as an ordinary completion. The text
  is the generation prompt of the user message followed by the transcript verbatim, which for templates that copy
  the assistant message as written (ChatML / Qwen2.5, ...) is exactly ``apply_chat_template([user,
  assistant(transcript)], tokenize=False, continue_final_message=True)``. Appending rather than re-rendering every
  turn keeps the transcript byte for byte (templates that trim messages, or move ``<think>`` blocks out of earlier
  assistant text as Qwen3's does, would rewrite what the model wrote) and makes each turn's context an extension of
  the last one (servers' prefix caches hit). Used for ``hf:`` models and for ``openai:`` servers given
  ``tokenizer=`` (the completions API then carries the rendered text, which every server accepts).
* :class:`ServerChatFormat`: the chat completions API with the transcript as a partial assistant message and the
  extra body fields ``continue_final_message: true, add_generation_prompt: false``, which vLLM and SGLang honour
  (as does the test server, ``tests/servers/openai_server.py``); the server renders with the served model's
  template. Servers that ignore the two fields close the assistant turn and start a new one: give ``tokenizer=``
  for those.
* :class:`CompletionFormat`: completions mode, ``prompt + transcript``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import SteerEnvsError
from ..llm.base import Generation, GenerationConfig, LLMBackend

#: values of the ``chat_template`` setting
CHAT_TEMPLATE_MODES = ("auto", "on", "off")


def chat_messages(prompt: str, transcript: str) -> list[dict[str, str]]:
    """The conversation of chat mode: the prompt as the user message, the transcript (if any) as the assistant's
    unfinished message."""
    messages = [{"role": "user", "content": prompt}]
    if transcript:
        messages.append({"role": "assistant", "content": transcript})
    return messages


class ChatFormat(Protocol):
    """How an executor's prompt and transcript reach the model."""

    @property
    def name(self) -> str: ...

    def context(self, prompt: str, transcript: str) -> str:
        """The text the model continues (for a server-rendered chat, the raw text the messages carry)."""
        ...

    def generate(self, backend: LLMBackend, prompt: str, transcript: str, config: GenerationConfig) -> Generation: ...


@dataclass(frozen=True)
class CompletionFormat:
    """Completions mode: the prompt and the transcript as one raw text (base models, and ``chat_template=off``)."""

    name: str = "completions"

    def context(self, prompt: str, transcript: str) -> str:
        return prompt + transcript

    def generate(self, backend: LLMBackend, prompt: str, transcript: str, config: GenerationConfig) -> Generation:
        return backend.generate([self.context(prompt, transcript)], config)[0]


@dataclass(frozen=True)
class TemplateFormat:
    """Chat mode rendered here with ``tokenizer``'s chat template (``source`` says whose tokenizer)."""

    tokenizer: Any
    source: str
    name: str = "chat-template"

    def opening(self, prompt: str) -> str:
        """The template's own rendering of the user message with the generation prompt (the assistant header)."""
        return self.tokenizer.apply_chat_template(chat_messages(prompt, ""), tokenize=False, add_generation_prompt=True)

    def context(self, prompt: str, transcript: str) -> str:
        return self.opening(prompt) + transcript

    def model_input(self, prompt: str, transcript: str) -> str:
        """What is sent: :meth:`context`, less a leading BOS the template wrote when the tokenizer adds its own
        on encoding (as the transformers backend and servers' completions endpoints do), so the model reads one."""
        text = self.context(prompt, transcript)
        bos = getattr(self.tokenizer, "bos_token", None)
        if bos and text.startswith(bos) and _adds_bos(self.tokenizer):
            return text[len(bos) :]
        return text

    def generate(self, backend: LLMBackend, prompt: str, transcript: str, config: GenerationConfig) -> Generation:
        return backend.generate([self.model_input(prompt, transcript)], config)[0]


@dataclass(frozen=True)
class ServerChatFormat:
    """Chat mode rendered by the server: the chat completions API, the transcript as a partial assistant message."""

    name: str = "server-chat"

    def context(self, prompt: str, transcript: str) -> str:
        return prompt + transcript

    def generate(self, backend: LLMBackend, prompt: str, transcript: str, config: GenerationConfig) -> Generation:
        return backend.generate_chat([chat_messages(prompt, transcript)], config)[0]  # type: ignore[attr-defined]


def _adds_bos(tokenizer: Any) -> bool:
    bos_id = getattr(tokenizer, "bos_token_id", None)
    if bos_id is None:
        return False
    ids = tokenizer("a").get("input_ids") or []
    return bool(ids) and ids[0] == bos_id


@functools.lru_cache(maxsize=8)
def load_chat_tokenizer(folder: str) -> Any:
    """The tokenizer in ``folder`` (loaded once per process: a 150k-entry vocabulary takes a while)."""
    from transformers import AutoTokenizer

    path = Path(folder).expanduser()
    if not path.is_dir():
        raise SteerEnvsError(
            f"tokenizer={folder}: no such folder; give a local folder with the model's tokenizer files "
            "(tokenizer_config.json with its chat_template), e.g. a copy of the served model's repository"
        )
    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise SteerEnvsError(f"tokenizer={folder}: could not load a tokenizer from that folder: {exc}") from exc


def _has_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def _chat_only(backend: LLMBackend) -> bool:
    """A backend that sends every prompt as a chat message (``openai:...?api=chat``): a locally rendered template
    would be wrapped in the server's template a second time."""
    return getattr(getattr(backend, "options", None), "api", None) == "chat"


def resolve_chat_format(mode: str, backend: LLMBackend, tokenizer: str | None = None) -> ChatFormat:
    """The :class:`ChatFormat` for the setting ``chat_template=mode`` on ``backend``.

    ``tokenizer`` (a folder) supplies the chat template when the backend has no tokenizer of its own to read
    (``openai:``, ``llamacpp:``), or overrides the model's.
    """
    if mode not in CHAT_TEMPLATE_MODES:
        raise SteerEnvsError(f"chat_template must be one of {', '.join(CHAT_TEMPLATE_MODES)}; got {mode!r}")
    if mode == "off":
        return CompletionFormat()
    server_chat = callable(getattr(backend, "generate_chat", None))
    if server_chat and _chat_only(backend):
        return ServerChatFormat()
    if tokenizer is not None:
        tok, source = load_chat_tokenizer(str(tokenizer)), f"tokenizer={tokenizer}"
    else:
        tok, source = getattr(backend, "tokenizer", None), f"{getattr(backend, 'name', 'the model')}'s tokenizer"
    if tok is not None and _has_template(tok):
        return TemplateFormat(tok, source)
    if mode == "auto":
        return CompletionFormat()
    if tokenizer is not None:
        raise SteerEnvsError(
            f"chat_template=on, but {source} has no chat template (no chat_template in its "
            "tokenizer_config.json); give the instruct model's tokenizer folder, or chat_template=off"
        )
    if server_chat:
        return ServerChatFormat()
    raise SteerEnvsError(
        f"chat_template=on, but {getattr(backend, 'name', 'this backend')} has no chat template to apply (a base "
        "model's tokenizer, or a backend that exposes none); give tokenizer=<folder> with the instruct model's "
        "tokenizer, or use chat_template=auto / off"
    )


__all__ = [
    "CHAT_TEMPLATE_MODES",
    "ChatFormat",
    "CompletionFormat",
    "ServerChatFormat",
    "TemplateFormat",
    "chat_messages",
    "load_chat_tokenizer",
    "resolve_chat_format",
]
