"""The OpenAI-compatible backend: ``openai:<model>@<base_url>`` (vLLM, SGLang, llama.cpp server, Ollama, ...).

Users run the big models on their own GPUs behind one of these servers and point the suite at them. Remote
calls fail in ordinary ways (a server still loading, an overloaded GPU, a proxy returning an HTML error page),
so every request has a timeout (bounding the whole reply: a server trickling bytes cannot hold a run) and is
retried with exponential backoff on timeouts, connection errors (refused, reset, a server that died mid-run),
truncated bodies, HTTP 408/429/5xx and malformed replies; other HTTP errors (a wrong model name, a bad request)
fail at once. After the retries a :class:`OpenAIBackendError` names the URL, the number of attempts and the last
failure; an executor records it on the episode (``info["failure"]``) and the run goes on.

A prompt longer than the served model's context is *not* such a failure: the server works and refuses it (vLLM
answers HTTP 400 "This model's maximum context length is ..."). Such a reply, recognised by
:func:`~steer_envs.llm.base.is_context_overflow_message`, raises
:class:`~steer_envs.llm.base.ContextOverflowError` at once (the same prompt would be refused again), which an
executor turns into a scored truncation of its episode. :attr:`OpenAIBackend.context_length` says how long a
prompt may be: the ``max_model_len`` option when given (``openai:NAME@URL?max_model_len=4096``), else what the
server lists for the model under ``GET /v1/models`` (vLLM lists ``max_model_len``), asked once and cached.

Plain ``http.client`` from the standard library does the HTTP: no client-library version drift, and full control
of timeouts and retries. Prompts of a batch are sent concurrently (one request each, which every server accepts).
Connections are kept alive and reused (a small pool per backend: at most one per request in flight), and
``max_in_flight`` bounds the requests in flight to the server process-wide: envs built on one spec share one
backend (:func:`~steer_envs.llm.registry.make_backend`), so a concurrent vector env of 256 episodes
(:mod:`steer_envs.vector`) never opens more than ``max_in_flight`` sockets nor queues more than that many
requests on the server.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import random
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from .. import cooperative
from ..errors import SteerEnvsError
from ..httpio import KeepAlivePool
from .base import (
    BackendStats,
    ContextOverflowError,
    FinishReason,
    Generation,
    GenerationConfig,
    LLMBackendError,
    check_prompts,
    is_context_overflow_message,
    match_candidates,
)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: statuses whose reply may say the prompt outgrew the context (vLLM and SGLang: 400; some proxies: 413 / 422)
OVERFLOW_STATUS = frozenset({400, 413, 422})
#: the keys a ``GET /v1/models`` entry may give the context length under (vLLM and SGLang, then other servers)
CONTEXT_KEYS = ("max_model_len", "context_length", "max_context_length", "context_window")
#: seconds before a failed ``GET /v1/models`` (a server still starting) is asked again
CONTEXT_RETRY_S = 30.0


class OpenAIBackendError(LLMBackendError):
    """An OpenAI-compatible server did not give a usable answer after the retries."""


class EndpointMissingError(OpenAIBackendError):
    """An endpoint outside the OpenAI API answered HTTP 404 or 405: a feature this server does not offer (vLLM's
    ``/tokenize``), not a failed request. (Inside the API a 404 is an answer, e.g. vLLM's "model not found".)"""


class _Retryable(Exception):
    """A failure worth another attempt (timeout, connection error, 5xx, malformed reply)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the client sent it and the server answered it, for :attr:`OpenAIBackend.recorder`: the
    body exactly as posted (a benchmark replays it with another client), ``perf_counter`` times around the
    exchange, the HTTP status and the reply's ``usage.completion_tokens`` (None when absent or not 2xx)."""

    path: str
    body: dict[str, Any]
    started: float
    finished: float
    status: int
    completion_tokens: int | None


@dataclass(frozen=True)
class OpenAIOptions:
    """How to talk to the server. ``api``: ``completions`` (raw text continuation, the natural fit for an
    executor's growing transcript) or ``chat`` (for chat-only servers: the prompt is sent as one user message;
    executors in chat mode send :meth:`OpenAIBackend.generate_chat` conversations whatever ``api`` says).
    ``timeout`` bounds each request (connecting, and the whole reply), in seconds; backoff doubles from
    ``backoff`` up to ``max_backoff``. ``concurrency``: threads one ``generate`` call sends a batch's prompts
    with; ``max_in_flight``: requests this backend has in flight at once over all threads of the process (the
    rest wait for a slot; also the most keep-alive connections it holds). ``max_model_len``: the served model's
    context in tokens, when the server does not list it (else it is asked for once:
    :attr:`OpenAIBackend.context_length`)."""

    api: Literal["completions", "chat"] = "completions"
    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    concurrency: int = 8
    api_key: str | None = None
    logprobs_k: int = 20
    max_in_flight: int = 64
    max_model_len: int | None = None

    def __post_init__(self) -> None:
        if self.max_model_len is not None and (
            isinstance(self.max_model_len, bool) or not isinstance(self.max_model_len, int) or self.max_model_len < 1
        ):
            raise SteerEnvsError(
                f"openai option max_model_len must be a positive number of tokens (the served "
                f"model's context, e.g. max_model_len=4096), got {self.max_model_len!r}"
            )
        if self.api not in ("completions", "chat"):
            raise SteerEnvsError(f"openai api must be 'completions' or 'chat', got {self.api!r}")
        if self.timeout <= 0 or self.max_retries < 0 or self.concurrency < 1 or self.max_in_flight < 1:
            raise SteerEnvsError(
                f"openai options need timeout > 0, max_retries >= 0, concurrency >= 1, max_in_flight >= 1; got "
                f"timeout={self.timeout}, max_retries={self.max_retries}, concurrency={self.concurrency}, "
                f"max_in_flight={self.max_in_flight}"
            )


def parse_openai_arg(arg: str) -> tuple[str, str]:
    """Split ``<model>@<base_url>`` and normalise the URL to end in ``/v1``."""
    model, sep, url = arg.partition("@")
    if not sep or not model or not url:
        raise SteerEnvsError(
            f"openai:{arg} must look like openai:<model>@<base_url>, e.g. openai:qwen2.5-7b@http://127.0.0.1:8000/v1"
        )
    if not url.startswith(("http://", "https://")):
        raise SteerEnvsError(f"openai base URL {url!r} must start with http:// or https://")
    url = url.rstrip("/")
    if not url.endswith("/v1"):
        url += "/v1"
    return model, url


class OpenAIBackend:
    """An :class:`~steer_envs.llm.base.LLMBackend` over HTTP to an OpenAI-compatible server."""

    def __init__(self, model: str, base_url: str, options: OpenAIOptions | None = None) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.options = options or OpenAIOptions()
        self.name = f"openai:{model}@{self.base_url}"
        self.stats = BackendStats()
        self._stats_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._api_key = self.options.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        #: keep-alive connections, at most ``max_in_flight`` requests at once (process-wide for a shared backend)
        self.http = KeepAlivePool(self.base_url, self.options.timeout, self.options.max_in_flight)
        self._context: tuple[int | None, float] | None = None  # (context length, when to ask again)
        self._context_lock = threading.Lock()
        #: off (None) by default; a callable receives a :class:`RecordedRequest` per answered POST (from the
        #: requesting thread), so a benchmark can replay the exact workload the suite sent
        self.recorder: Callable[[RecordedRequest], None] | None = None

    @property
    def context_length(self) -> int | None:
        """The served model's context in tokens: the ``max_model_len`` option, else the server's ``GET /v1/models``
        entry for this model (asked on first use and cached; a server that does not list it gives None, and one that
        cannot be reached is asked again after :data:`CONTEXT_RETRY_S` seconds)."""
        if self.options.max_model_len is not None:
            return self.options.max_model_len
        with cooperative.holding(self._context_lock):  # held across a request: a hub's other tasks must run
            if self._context is not None and time.monotonic() < self._context[1]:
                return self._context[0]
            try:  # a server that answered is final; one that could not be reached is asked again later
                value, retry_at = self._listed_context_length(), float("inf")
            except OpenAIBackendError:
                value, retry_at = None, time.monotonic() + CONTEXT_RETRY_S
            self._context = (value, retry_at)
            return value

    def _listed_context_length(self) -> int | None:
        """The context the server lists for this model; an adapter's entry (vLLM lists a LoRA module without a
        ``max_model_len``, naming its base model as ``parent``) reads its base model's."""
        entries = self._model_entries()
        by_id = {m.get("id"): m for m in entries}
        entry = by_id.get(self.model, entries[0] if len(entries) == 1 else None)
        seen: set[str] = set()
        while entry is not None and str(entry.get("id")) not in seen:
            seen.add(str(entry.get("id")))
            for key in CONTEXT_KEYS:
                value = entry.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
            entry = by_id.get(entry.get("parent"))
        return None

    # -- HTTP ----------------------------------------------------------------------------------------------
    def _root_path(self, path: str) -> str:
        """``path`` beside the API instead of below it: the base URL's path less its ``/v1`` (a server behind a
        proxy at ``http://host/llm/v1`` serves ``/llm/tokenize``)."""
        prefix = urllib.parse.urlparse(self.base_url).path.rstrip("/")
        return prefix.removesuffix("/v1") + path

    def _url(self, path: str, root: bool) -> str:
        if not root:
            return f"{self.base_url}{path}"
        parsed = urllib.parse.urlparse(self.base_url)
        return f"{parsed.scheme}://{parsed.netloc}{self._root_path(path)}"

    def _post_once(self, path: str, body: dict[str, Any], root: bool = False) -> dict[str, Any]:
        url = self._url(path, root)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self._api_key}"}
        started = time.perf_counter()
        try:
            sent = self._root_path(path) if root else path
            status, reason, raw = self.http.request("POST", sent, json.dumps(body).encode(), headers, root=root)
        except TimeoutError as exc:
            raise _Retryable(f"timed out after {self.options.timeout:g} s") from exc
        except http.client.IncompleteRead as exc:
            raise _Retryable(f"truncated reply: {len(exc.partial)} bytes, {exc.expected} more announced") from exc
        except (http.client.HTTPException, OSError) as exc:
            raise _Retryable(f"connection failed: {type(exc).__name__}: {exc}") from exc
        if self.recorder is not None:
            self.recorder(
                RecordedRequest(
                    path,
                    body,
                    started,
                    time.perf_counter(),
                    status,
                    completion_tokens(raw) if 200 <= status < 300 else None,
                )
            )
        if not 200 <= status < 300:
            detail = raw[:300].decode(errors="replace").strip()
            message = f"HTTP {status} {reason}" + (f": {detail}" if detail else "")
            text = error_text(raw)
            if status in OVERFLOW_STATUS and is_context_overflow_message(text):
                with self._stats_lock:
                    self.stats.extra["context_overflows"] = self.stats.extra.get("context_overflows", 0) + 1
                raise ContextOverflowError(
                    f"{self.name}: the prompt does not fit the model's context "
                    f"(HTTP {status}, not retried): {text[:400]}"
                )
            if status in RETRY_STATUS:
                raise _Retryable(message)
            failure = f"{self.name}: POST {url} failed with {message} (not retried)"
            if root and status in (404, 405):  # outside the OpenAI API: a feature this server does not offer
                raise EndpointMissingError(failure)
            raise OpenAIBackendError(failure)
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _Retryable(f"malformed JSON reply: {raw[:120]!r}") from exc
        if not isinstance(data, dict):
            raise _Retryable(f"malformed reply: expected a JSON object, got {type(data).__name__}")
        return data

    def _post(self, path: str, body: dict[str, Any], parse, root: bool = False):
        """POST with retries; ``parse`` turns the JSON reply into a result (KeyError etc. = malformed). ``root``:
        ``path`` is below the server's root, not below the base URL's ``/v1``."""
        url = self._url(path, root)
        attempts = self.options.max_retries + 1
        last = ""
        for attempt in range(attempts):
            if attempt:
                with self._stats_lock:
                    self.stats.retries += 1
                delay = min(self.options.max_backoff, self.options.backoff * 2 ** (attempt - 1))
                cooperative.sleep(delay * (0.5 + random.random() / 2))  # jitter: concurrent retries do not align
            try:
                data = self._post_once(path, body, root)
                try:
                    return parse(data)
                except (KeyError, IndexError, TypeError, ValueError) as exc:
                    if "error" in data:
                        raise _Retryable(f"server error: {str(data['error'])[:200]}") from exc
                    raise _Retryable(f"malformed reply (missing {exc}): {json.dumps(data)[:160]}") from exc
            except _Retryable as exc:
                last = str(exc)
        with self._stats_lock:
            self.stats.failures += 1
        raise OpenAIBackendError(
            f"{self.name}: POST {url} failed after {attempts} attempt(s); last error: {last}. "
            "Check that the server is running and serves this model (GET /v1/models), or raise the timeout / retries"
        )

    def _map(self, fn, items: list):
        if len(items) <= 1 or self.options.concurrency == 1:
            return [fn(x) for x in items]
        hub = cooperative.current_hub()
        if hub is not None:  # one task per item on the running hub (concurrency: the in-flight bound applies)
            return hub.gather([functools.partial(fn, x) for x in items])
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="openai")
        return list(self._pool.map(fn, items))

    # -- protocol ------------------------------------------------------------------------------------------
    def _sampling(self, config: GenerationConfig) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": config.max_new_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
        }
        if config.stop:
            body["stop"] = list(config.stop)
        if config.seed is not None:
            body["seed"] = config.seed
        return body

    def _generate_one(self, prompt: str | list[dict[str, str]], config: GenerationConfig) -> Generation:
        """One request: a text ``prompt`` (a completion, or one user message when ``api=chat``) or a conversation
        (always the chat API; see :meth:`generate_chat`)."""
        body = self._sampling(config)
        if not isinstance(prompt, str) or self.options.api == "chat":
            body.update(chat_request_fields(prompt))
            path = "/chat/completions"

            def text_of(choice):
                return choice["message"]["content"] or ""
        else:
            body["prompt"] = prompt
            path = "/completions"

            def text_of(choice):
                return choice["text"]

        def parse(data: dict[str, Any]) -> Generation:
            choice = data["choices"][0]
            text = text_of(choice)
            if not isinstance(text, str):
                raise TypeError("text")
            reason: FinishReason = "length" if choice.get("finish_reason") == "length" else "stop"
            stop = choice.get("stop_reason")
            usage = data.get("usage") or {}
            tokens = int(usage.get("completion_tokens") or max(1, len(text.split())))
            return Generation(
                text=text,
                tokens=tokens,
                finish_reason=reason,
                stop_sequence=stop if isinstance(stop, str) and stop in config.stop else None,
            )

        return self._post(path, body, parse)

    def generate(self, prompts: Sequence[str], config: GenerationConfig) -> list[Generation]:
        items = check_prompts(prompts)
        results = self._map(lambda p: self._generate_one(p, config), items)
        with self._stats_lock:
            self.stats.calls += 1
            self.stats.prompts += len(items)
            self.stats.generated_tokens += sum(g.tokens for g in results)
        return results

    def generate_chat(
        self, conversations: Sequence[Sequence[dict[str, str]]], config: GenerationConfig
    ) -> list[Generation]:
        """One chat completion per conversation (lists of ``{"role", "content"}`` messages), sent concurrently.

        A conversation that ends with an assistant message is *continued*: that message is the assistant's
        unfinished turn (an executor's transcript), sent with ``continue_final_message: true,
        add_generation_prompt: false``, extra fields that vLLM and SGLang honour (the reply's text is what comes
        after it). Others end with the generation prompt as usual.
        """
        items = [list(c) for c in conversations]
        if not items or not all(c and all(isinstance(m, dict) for m in c) for c in items):
            raise SteerEnvsError("generate_chat needs a list of non-empty conversations of {role, content} messages")
        results = self._map(lambda c: self._generate_one(c, config), items)
        with self._stats_lock:
            self.stats.calls += 1
            self.stats.prompts += len(items)
            self.stats.generated_tokens += sum(g.tokens for g in results)
        return results

    def _top_one(self, prompt: str, k: int) -> dict[str, float]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": 1, "temperature": 0.0}
        if self.options.api == "chat":
            body.update(messages=[{"role": "user", "content": prompt}], logprobs=True, top_logprobs=k)

            def parse_chat(data):
                first = data["choices"][0]["logprobs"]["content"][0]
                return {e["token"]: float(e["logprob"]) for e in first["top_logprobs"]}

            return self._post("/chat/completions", body, parse_chat)
        body.update(prompt=prompt, logprobs=k)

        def parse(data):
            table = data["choices"][0]["logprobs"]["top_logprobs"][0]
            return {str(t): float(v) for t, v in table.items()}

        return self._post("/completions", body, parse)

    def top_logprobs(self, prompts: Sequence[str], k: int) -> list[dict[str, float]]:
        items = check_prompts(prompts)
        return self._map(lambda p: self._top_one(p, k), items)

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> list[dict[str, float]]:
        """From the server's top-``logprobs_k`` table; see :func:`~steer_envs.llm.base.match_candidates`."""
        if not candidates:
            raise SteerEnvsError("next_token_logprobs needs at least one candidate string, e.g. ['yes', 'no']")
        tables = self.top_logprobs(prompts, self.options.logprobs_k)
        return [match_candidates(t, candidates) for t in tables]

    def choose(self, prompt: str, choices: Sequence[str], config: GenerationConfig) -> str:
        """The continuation of ``prompt`` constrained to one of ``choices`` (vLLM's structured output ``choice``:
        every other token is masked), sampled with ``config``: a model too small to follow a grammar still picks
        among the allowed answers, as a local model scoring each choice would."""
        if not choices:
            raise SteerEnvsError("choose needs at least one choice")
        body = self._sampling(config)
        body.update(prompt=prompt, structured_outputs={"choice": [str(c) for c in choices]})
        return self._post("/completions", body, lambda data: str(data["choices"][0]["text"]))

    def continuation_logprobs(self, rows: Sequence[Sequence[int]], starts: Sequence[int]) -> list[list[float]]:
        """``log P(row[j] | row[:j])`` for every ``j >= start`` of each token-id row: the tokens a local model scored,
        scored by the served one (a served LoRA adapter checked against peft's).

        One request per scored token: the prefix as token ids, one generated token forced to ``row[j]`` with vLLM's
        ``allowed_token_ids``, and its log-probability, which vLLM takes from the raw logits (before any processor).
        Not ``prompt_logprobs``: the CPU build's LoRA logits path fails on it. The server's prefix cache makes the
        prefixes after the first cheap."""
        jobs = [(i, j) for i, (row, start) in enumerate(zip(rows, starts)) for j in range(int(start), len(row))]
        if any(int(start) < 1 for start in starts):
            raise SteerEnvsError("continuation_logprobs needs start >= 1 (the first token has no prefix to score it)")

        def one(job: tuple[int, int]) -> float:
            row, j = [int(t) for t in rows[job[0]]], job[1]
            body = {
                "model": self.model,
                "prompt": row[:j],
                "max_tokens": 1,
                "temperature": 0.0,
                "logprobs": 1,
                "allowed_token_ids": [row[j]],
            }
            return self._post(
                "/completions", body, lambda data: float(data["choices"][0]["logprobs"]["token_logprobs"][0])
            )

        values = self._map(one, jobs)
        out: list[list[float]] = [[] for _ in rows]
        for (i, _), value in zip(jobs, values):
            out[i].append(value)
        return out

    def tokenize(self, texts: Sequence[str], add_special_tokens: bool = False) -> list[list[int]]:
        """The served model's token ids of each text (vLLM's ``POST /tokenize``; ``add_special_tokens`` adds what
        the model's tokenizer puts around a prompt, e.g. BOS), so a client can fit and score prompts in the very
        tokens the server reads. A server without the endpoint raises :class:`EndpointMissingError`."""

        def one(text: str) -> list[int]:
            body = {"model": self.model, "prompt": text, "add_special_tokens": add_special_tokens}
            return self._post("/tokenize", body, lambda data: [int(t) for t in data["tokens"]], root=True)

        return self._map(one, list(texts))

    def models(self) -> list[str]:
        """Model ids the server lists (GET /v1/models); one attempt, for diagnostics."""
        return [m["id"] for m in self._model_entries()]

    def _model_entries(self) -> list[dict[str, Any]]:
        """The entries of ``GET /v1/models`` (one attempt); an unreachable server or a malformed reply raises
        :class:`OpenAIBackendError`."""
        url = f"{self.base_url}/models"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self._api_key}"})
        try:
            with urllib.request.urlopen(request, timeout=self.options.timeout) as response:
                data = json.loads(response.read())
            entries = [m for m in data["data"] if isinstance(m, dict) and "id" in m]
        except Exception as exc:  # noqa: BLE001 - diagnostics only, turned into a clear error
            raise OpenAIBackendError(f"{self.name}: GET {url} failed: {exc}") from exc
        return entries

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
        self.http.close()


def completion_tokens(raw: bytes) -> int | None:
    """``usage.completion_tokens`` of a reply body, or None (parsed apart from the reply: the recorder is off the
    request path's hot loop unless a benchmark turns it on)."""
    try:
        value = json.loads(raw)["usage"]["completion_tokens"]
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) else None


def error_text(raw: bytes) -> str:
    """The message of an error reply: ``error.message`` (OpenAI, newer vLLM) or ``message`` (older vLLM) of a JSON
    body, else the body's text (the first 4,000 characters)."""
    text = raw[:4000].decode(errors="replace").strip()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return text
    inner = data.get("error") if isinstance(data, dict) else None
    message = (
        inner.get("message") if isinstance(inner, dict) else (data.get("message") if isinstance(data, dict) else None)
    )
    return message if isinstance(message, str) and message else text


def chat_request_fields(prompt: str | Sequence[dict[str, str]]) -> dict[str, Any]:
    """The ``messages`` of a chat request, and the fields that continue a final assistant message (vLLM's and
    SGLang's ``continue_final_message`` / ``add_generation_prompt``); a bare string is one user message."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    fields: dict[str, Any] = {"messages": messages}
    if messages[-1].get("role") == "assistant":
        fields.update(continue_final_message=True, add_generation_prompt=False)
    return fields


def load_openai_backend(arg: str, **options: Any) -> OpenAIBackend:
    model, url = parse_openai_arg(arg)
    known = set(OpenAIOptions.__dataclass_fields__)
    unknown = sorted(set(options) - known)
    if unknown:
        raise SteerEnvsError(f"unknown openai backend option(s) {unknown}; valid: {', '.join(sorted(known))}")
    return OpenAIBackend(model, url, OpenAIOptions(**options))
