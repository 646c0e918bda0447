"""ServedSteerer: a steerer behind any OpenAI-compatible server (vLLM, SGLang, llama.cpp server), for evaluation.

The paper's zero-shot steering row prompts a large LLM (Qwen3-8B) that nobody runs inside the evaluation process:
it sits behind an inference server. This backbone reaches it through the ``openai:<model>@<base_url>`` backend
(:mod:`steer_envs.llm.openai_client`: timeouts, retries, concurrent requests) with the same prompts as
:class:`~agents.steering.causal_lm.CausalLMSteerer`:

* Fast path: the observation followed by ``FAST_QUESTION`` ("... Answer yes or no.\\nAnswer:");
  ``z = log P(yes) − log P(no)`` of the token after it. On a server that tokenises (vLLM's ``POST /tokenize``;
  ``fit="tokens"``, or ``"auto"`` when the server answers it) this is the local causal-LM steerer's own
  computation: the same prompt ids (:func:`~.context_fit.fit_prompt_ids`: BOS, the observation fitted to
  ``max_prompt_tokens`` in the model's tokens, the question) and the log-probs of the same two candidate tokens,
  each forced (:meth:`~steer_envs.llm.openai_client.OpenAIBackend.continuation_logprobs`), so neither can be
  missing. By characters (``fit="chars"``: servers without ``/tokenize``), one request reads the top log-probs of
  the first generated token with :func:`~steer_envs.llm.base.match_candidates` (``" yes"`` and ``"yes"`` both
  count); a candidate missing from the server's top ``k`` gets the table's smallest log-prob (an upper bound, so
  ``z`` stays finite) and the miss is counted in :attr:`ServedStats.fast_candidate_missing`.
* Slow path: generated text, ``<think> reasoning </think>`` and then a line ``Intervention: NAME`` or
  ``Intervention: NAME: ARGUMENT``. The reasoning is generated up to ``</think>`` (a stop string); if it did not
  already contain an ``Intervention:`` line, a second request continues after a forced ``</think>`` and
  ``\\nIntervention: `` up to the end of the line, so a model that rambles still ends in the grammar.
  :func:`parse_intervention` reads the line robustly (case, quotes, markdown, ``-``/space for ``_``); an unknown
  NAME, or no such line at all, becomes ``pass`` and is counted as a parse failure. With ``name_choice="choice"``
  the line's request is constrained to the allowed names (vLLM's structured output ``choice``), so the model
  *chooses* a name as the local causal-LM steerer does (it scores each name) instead of writing one: a model too
  small to follow the grammar still gives its preferred intervention.

Prompts fit the served model's context (:mod:`.context_fit`): the goal stays and the oldest turns are elided
behind a visible marker (counted in :attr:`ServedSteerer.context_stats`). In tokens, the budget is the local
steerer's: ``max_prompt_tokens``, capped by the context less the reasoning and the grammar, and a goal that does
not fit is refused with the numbers, as the local steerer refuses it. By characters, the prompt's tokens are
estimated (``chars_per_token``) against the server's ``context_length`` (the ``max_model_len`` option, else what
``GET /v1/models`` lists) less the tokens the request asks for, and ``max_prompt_chars`` caps it. A request the
server still refuses for length (:class:`~steer_envs.llm.base.ContextOverflowError`: an estimate can be wrong) is
fitted again with a budget ``REFIT_FACTOR`` smaller, kept for later prompts, at most ``max_refits`` times; if even then
it does not fit, the decision is "no evidence" (fast path ``z = 0``) or a pass (slow path), counted as a fallback, so no
evaluation aborts on length.

There are no gradients: a served model's weights are not here. :meth:`ServedSteerer.trainable_parameters`,
:meth:`ServedSteerer.slow_logprobs` and ``train()`` raise a clear error, so a trainer configured with this
backbone stops at once instead of failing inside autograd.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from steer_envs.errors import SteerEnvsError
from steer_envs.llm.base import ContextOverflowError, context_length_of

from .causal_lm import (
    FAST_QUESTION,
    GRAMMAR_HEAD,
    GRAMMAR_RESERVE,
    PASS_NAME,
    SLOW_INSTRUCTION,
    THINK_END,
)
from .context_fit import (
    MAX_PROMPT_TOKENS,
    PREFIX_PROBE,
    ContextStats,
    FittedText,
    GoalDoesNotFitError,
    fit_observation,
    fit_prompt_ids,
    goal_refusal,
    prompt_token_budget,
    special_prefix,
)
from .interventions import InterventionOption, argument_candidates
from .steerer import SlowSample, Steerer

#: the fast path's two answers; ``match_candidates`` strips whitespace, so tokens "yes" and " yes" both count
YES, NO = " yes", " no"
#: how the slow path reads NAME: "parse" the generated line | "choice": the line constrained to the names (vLLM)
NAME_CHOICES = ("parse", "choice")
#: how prompts are fitted and z is read: "tokens" (the server's tokenizer, forced candidates: the local steerer's
#: computation) | "chars" (estimated tokens, the top-k table) | "auto" (tokens where the server tokenises)
FIT_MODES = ("auto", "tokens", "chars")
#: the smallest ``max_prompt_chars`` accepted (room for the goal and a turn)
HEAD_CHARS = 400
#: the first guess of characters per token: English BPE text runs near 4, tags, digits and names lower, so 3 errs
#: towards short prompts
CHARS_PER_TOKEN = 3.0
#: a refit after the server refused a fitted prompt shrinks the character budget by this factor
REFIT_FACTOR = 0.6
#: tokens the slow path's second request adds after the prompt besides the reasoning (``</think>``, the grammar head)
SLOW_MARGIN = 16
MAX_ARGUMENT_CHARS = 120
_LINE = re.compile(r"intervention\s*[:=\-]\s*(?P<rest>[^\n]*)", re.IGNORECASE)
_DECOR = " \t\"'`*_[]()<>.,;!"


class EvaluationOnlyError(SteerEnvsError):
    """Something tried to train a served steerer (its weights live on the server)."""


def _no_training(what: str) -> EvaluationOnlyError:
    return EvaluationOnlyError(
        f"the served steerer is evaluation-only: {what} needs gradients, and the model's weights live on the "
        "server. Train a local backbone instead (backbone 'causal_lm' with model hf:<folder> or hf:gemma-3-270m, "
        "or 'encoder'), then serve the trained model"
    )


@dataclass(frozen=True)
class ParsedIntervention:
    """What :func:`parse_intervention` read: ``name`` (an allowed name, or ``None`` for pass), the argument text,
    and ``ok=False`` with a ``failure`` reason when the text held no valid intervention (then it is a pass)."""

    name: str | None
    argument: str = ""
    ok: bool = True
    failure: str = ""


def _norm(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", text.strip(_DECOR).lower())


def parse_intervention(text: str, names: Sequence[str]) -> ParsedIntervention:
    """Read the ``Intervention: NAME[: ARGUMENT]`` line of a generated slow-path output.

    The last such line after ``</think>`` wins (or the last line anywhere if there is no ``</think>``), so words
    inside the reasoning do not count once the model closed it. NAME matches an entry of ``names`` ignoring case,
    quotes, markdown emphasis and ``-``/spaces standing for ``_``; failing an exact match, the longest name the
    line starts with. ``pass`` (``PASS_NAME``) is always understood. Anything else is a pass with ``ok=False``.
    Deterministic: the same text always gives the same result."""
    after = text.rsplit(THINK_END, 1)[1] if THINK_END in text else text
    lines = list(_LINE.finditer(after)) or list(_LINE.finditer(text))
    if not lines:
        return ParsedIntervention(None, "", False, "no 'Intervention: NAME' line")
    rest = lines[-1].group("rest").strip()
    by_norm = {_norm(n): n for n in [*names, PASS_NAME]}
    head, sep, tail = rest.partition(":")
    name = by_norm.get(_norm(head))
    argument = tail.strip(_DECOR) if sep else ""
    if name is None:  # "refocus on the goal", "**stop_repeating** now": the longest name the line starts with
        flat = _norm(rest)
        for key in sorted(by_norm, key=len, reverse=True):
            if key and flat.startswith(key) and (len(flat) == len(key) or not flat[len(key)].isalnum()):
                name = by_norm[key]
                argument = rest.split(":", 1)[1].strip(_DECOR) if ":" in rest else ""
                break
    if name is None:
        shown = rest[:60] or "(empty)"
        return ParsedIntervention(None, "", False, f"unknown intervention name {shown!r}")
    if name == PASS_NAME:
        return ParsedIntervention(None, "", True, "")
    return ParsedIntervention(name, argument[:MAX_ARGUMENT_CHARS], True, "")


@dataclass
class ServedStats:
    """Counters of one served steerer: requests by path, top-k misses of a fast-path candidate, parse failures."""

    fast_scores: int = 0
    fast_candidate_missing: int = 0
    #: 1 when prompts were fitted in the server's tokens and z read from forced candidates, 0 by characters
    fit_by_tokens: int = 0
    slow_samples: int = 0
    slow_requests: int = 0
    parse_failures: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class _ServedVocab:
    """What the fast path needs of the server's tokenizer: the ids it puts before a prompt and the two candidates."""

    prefix: tuple[int, ...]
    yes_id: int
    no_id: int


class ServedSteerer(Steerer):
    """A :class:`Steerer` whose LLM is served over the OpenAI API (``model="openai:<name>@<base_url>"``).

    ``fit``: ``"tokens"`` (the server's tokenizer: the local steerer's prompts and z), ``"chars"`` (estimated
    tokens, z from the top-k table) or ``"auto"`` (tokens where the server answers ``POST /tokenize``).
    ``max_prompt_tokens``: in tokens, the most a prompt may have (the local steerer's default).
    ``top_logprobs``: by characters, how many next tokens the fast path asks the server for (vLLM's cap is 20).
    ``max_prompt_chars``: by characters, the most a prompt may have; prompts are also fitted to the model's context
    (``max_model_len`` when given, else the server's listing) at ``chars_per_token``, turn by turn (the goal kept,
    the oldest turns elided). Either way a prompt the server still refuses is refitted tighter, at most
    ``max_refits`` times.
    ``temperature``: the slow path's sampling temperature (each sample's server seed is drawn from the agent's
    generator, so a seeded episode asks for the same samples); ``greedy`` calls use 0. ``decision_log``: a JSONL
    file that receives one line per decision (fast ``z`` and its table's yes/no log-probs; slow raw output and what
    was parsed).
    ``seed`` is accepted like every backbone's (trainer configs pass one) and recorded; sampling itself is seeded
    by the generator ``sample_slow`` receives.
    """

    kind = "served"

    def __init__(
        self,
        options: Sequence[InterventionOption],
        model: str,
        top_logprobs: int = 20,
        max_prompt_chars: int = 6000,
        max_think_tokens: int = 48,
        max_line_tokens: int = 24,
        temperature: float = 1.0,
        max_arguments: int = 6,
        allow_pass: bool = True,
        timeout: float = 120.0,
        api: str = "completions",
        seed: int = 0,
        decision_log: str | os.PathLike | None = None,
        max_model_len: int | None = None,
        chars_per_token: float = CHARS_PER_TOKEN,
        max_refits: int = 4,
        name_choice: str = "parse",
        fit: str = "auto",
        max_prompt_tokens: int = MAX_PROMPT_TOKENS,
    ) -> None:
        super().__init__(options)
        if not isinstance(model, str) or not model.startswith("openai:"):
            raise SteerEnvsError(
                f"ServedSteerer model {model!r} must be an openai:<model>@<base_url> spec, e.g. "
                "openai:qwen3-8b@http://127.0.0.1:8000/v1 (local models: backbone causal_lm with hf:<folder>)"
            )
        from steer_envs.llm.openai_client import parse_openai_arg

        parse_openai_arg(model[len("openai:") :])  # a malformed spec fails here, before any episode
        for key, value, low in (
            ("top_logprobs", top_logprobs, 1),
            ("max_prompt_chars", max_prompt_chars, 2 * HEAD_CHARS),
            ("max_think_tokens", max_think_tokens, 1),
            ("max_line_tokens", max_line_tokens, 4),
            ("max_prompt_tokens", max_prompt_tokens, 16),
        ):
            if not isinstance(value, int) or value < low:
                raise SteerEnvsError(f"ServedSteerer {key} must be an integer >= {low}, got {value!r}")
        if temperature < 0:
            raise SteerEnvsError(f"ServedSteerer temperature must be >= 0 (0 = greedy), got {temperature!r}")
        if not isinstance(chars_per_token, (int, float)) or not 0.5 <= chars_per_token <= 16:
            raise SteerEnvsError(
                f"ServedSteerer chars_per_token must be a number in [0.5, 16] (about 4 for English "
                f"text), got {chars_per_token!r}"
            )
        if not isinstance(max_refits, int) or max_refits < 0:
            raise SteerEnvsError(f"ServedSteerer max_refits must be an integer >= 0, got {max_refits!r}")
        if name_choice not in NAME_CHOICES or (name_choice == "choice" and api != "completions"):
            raise SteerEnvsError(
                f"ServedSteerer name_choice must be one of {NAME_CHOICES} ('choice' with the "
                f"completions api), got {name_choice!r} with api {api!r}"
            )
        self.name_choice = name_choice
        if fit not in FIT_MODES or (fit == "tokens" and api != "completions"):
            raise SteerEnvsError(
                f"ServedSteerer fit must be one of {FIT_MODES} ('tokens' with the completions api: token-id prompts), "
                f"got {fit!r} with api {api!r}"
            )
        if api != "completions":  # a chat api applies the server's chat template: no token-id prompts to score
            fit = "chars"
        self.fit, self.max_prompt_tokens = fit, max_prompt_tokens
        if max_model_len is not None and (not isinstance(max_model_len, int) or max_model_len < 16):
            raise SteerEnvsError(
                f"ServedSteerer max_model_len must be the served model's context in tokens (an "
                f"integer >= 16), or None to ask the server; got {max_model_len!r}"
            )
        self.max_model_len, self.chars_per_token, self.max_refits = max_model_len, float(chars_per_token), max_refits
        self.model_spec, self.top_logprobs, self.max_prompt_chars = model, top_logprobs, max_prompt_chars
        self.max_think_tokens, self.max_line_tokens, self.temperature = max_think_tokens, max_line_tokens, temperature
        self.max_arguments, self.allow_pass, self.timeout, self.api, self.seed = (
            max_arguments,
            allow_pass,
            timeout,
            api,
            seed,
        )
        self.decision_log = None if decision_log is None else Path(decision_log)
        self.names = [o.name for o in self.options] + ([PASS_NAME] if allow_pass else [])
        self.stats = ServedStats()
        self.context_stats = ContextStats()
        #: the share of the estimated character budget prompts get; each refit shrinks it (kept for later prompts)
        self.fit_scale = 1.0
        self._backend: Any = None  # an openai: backend (its HTTP pool, tokenizer routes), built on first use
        self._vocab: _ServedVocab | None = None  # the server's prefix and candidate ids, read on first use
        self._suffix_ids: dict[str, list[int]] = {}  # the questions' ids in the server's tokens
        self._log_lock = threading.Lock()

    # -- plumbing -------------------------------------------------------------------------------------------
    @property
    def backend(self):
        """The HTTP client, built on first use (and again after unpickling: it holds threads and a pool)."""
        if self._backend is None:
            from steer_envs.llm.registry import make_backend

            options = {"max_model_len": self.max_model_len} if self.max_model_len is not None else {}
            self._backend = make_backend(
                self.model_spec,
                shared=False,
                logprobs_k=self.top_logprobs,
                timeout=self.timeout,
                api=self.api,
                **options,
            )
        return self._backend

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_backend"] = None
        state["_log_lock"] = None
        state["_vocab"] = None
        state["_suffix_ids"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._log_lock = threading.Lock()

    def counters(self) -> dict[str, int]:
        """Its requests, parse failures and top-k misses (:class:`ServedStats`) and how its prompts were fitted
        (:class:`~.context_fit.ContextStats`)."""
        return {**self.stats.as_dict(), **self.context_stats.as_dict()}

    def build_spec(self) -> dict[str, Any]:
        return {
            "model": self.model_spec,
            "top_logprobs": self.top_logprobs,
            "max_prompt_chars": self.max_prompt_chars,
            "max_think_tokens": self.max_think_tokens,
            "max_line_tokens": self.max_line_tokens,
            "temperature": self.temperature,
            "max_arguments": self.max_arguments,
            "allow_pass": self.allow_pass,
            "timeout": self.timeout,
            "api": self.api,
            "seed": self.seed,
            "max_model_len": self.max_model_len,
            "chars_per_token": self.chars_per_token,
            "max_refits": self.max_refits,
            "name_choice": self.name_choice,
            "fit": self.fit,
            "max_prompt_tokens": self.max_prompt_tokens,
        }

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        raise _no_training("training")

    def train(self, mode: bool = True) -> ServedSteerer:
        if mode:
            raise _no_training("train()")
        return super().train(False)

    def _log(self, row: dict[str, Any]) -> None:
        if self.decision_log is None:
            return
        line = json.dumps(row, sort_keys=True) + "\n"
        with self._log_lock:
            self.decision_log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.decision_log, "a", encoding="utf-8") as fh:  # one whole line per write, then fsync
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())

    @property
    def vocab(self) -> _ServedVocab | None:
        """The ids the server puts before a prompt and the fast path's two candidate ids when prompts are fitted in
        tokens, else None (read once: ``fit="auto"`` asks ``POST /tokenize`` and falls back to characters where the
        server has no such endpoint; ``fit="tokens"`` then fails, saying so)."""
        if self._vocab is None and self.fit != "chars":
            from steer_envs.llm.openai_client import EndpointMissingError

            try:
                [with_special] = self.backend.tokenize([PREFIX_PROBE], add_special_tokens=True)
                plain, yes, no = self.backend.tokenize([PREFIX_PROBE, YES, NO])
            except EndpointMissingError as exc:
                if self.fit == "tokens":
                    raise SteerEnvsError(
                        f"ServedSteerer fit=tokens needs a server that tokenises (vLLM's POST /tokenize): {exc}. "
                        "Use fit=chars to estimate tokens from characters and read z from the top-k log-probs"
                    ) from None
                self.fit = "chars"  # auto, on a server without /tokenize: recorded in build_spec and the counters
                return None
            if not yes or not no or yes[0] == no[0]:
                raise SteerEnvsError(f"the served tokenizer gives {YES!r} -> {yes} and {NO!r} -> {no}: no z to read")
            self._vocab = _ServedVocab(prefix=tuple(special_prefix(with_special, plain)), yes_id=yes[0], no_id=no[0])
            self.stats.fit_by_tokens = 1
        return self._vocab

    def prompt_budget(self, reserve: int) -> int:
        """The characters a prompt may have when ``reserve`` tokens are asked for after it: ``max_prompt_chars``,
        and the model's context less ``reserve`` at ``chars_per_token`` (times :attr:`fit_scale`) when known."""
        budget = float(self.max_prompt_chars)
        context = context_length_of(self.backend)
        if context is not None:
            budget = min(budget, max(0, context - reserve) * self.chars_per_token)
        return int(budget * self.fit_scale)

    @property
    def token_budget(self) -> int:
        """In tokens, the local steerer's prompt budget: ``max_prompt_tokens``, capped by the context less the
        reasoning and the grammar (times :attr:`fit_scale` after a refusal)."""
        generated = self.max_think_tokens + GRAMMAR_RESERVE
        return int(
            prompt_token_budget(self.max_prompt_tokens, context_length_of(self.backend), generated) * self.fit_scale
        )

    def prompt_ids(self, observation: Any, suffix: str) -> tuple[list[int], FittedText]:
        """In the server's tokens, the ids the local steerer would score: BOS + the observation fitted to
        :attr:`token_budget` + ``suffix``, and the fitted text. A goal that does not fit is refused with the
        numbers (:func:`~.context_fit.goal_refusal`), never cut."""
        vocab = self.vocab
        assert vocab is not None, "prompt_ids needs fit in tokens"

        def encode(text: str) -> list[int]:
            return self.backend.tokenize([text])[0]

        if suffix not in self._suffix_ids:  # the question is the same text at every decision: tokenised once
            self._suffix_ids[suffix] = encode(suffix)
        budget = self.token_budget
        try:
            ids, fitted = fit_prompt_ids(observation, self._suffix_ids[suffix], list(vocab.prefix), budget, encode)
        except GoalDoesNotFitError as exc:
            generated = self.max_think_tokens + GRAMMAR_RESERVE
            raise goal_refusal(
                exc, budget, self.max_prompt_tokens, context_length_of(self.backend), generated
            ) from None
        self.context_stats.record(fitted)
        return ids, fitted

    def prompt_text(self, observation: Any, suffix: str, reserve: int = 1) -> str:
        """Observation text fitted (in the server's tokens, or by characters to :meth:`prompt_budget`;
        :mod:`.context_fit`: the goal kept, the oldest turns elided behind a marker) + ``suffix``."""
        if self.vocab is not None:
            return self.prompt_ids(observation, suffix)[1].text + suffix
        room = self.prompt_budget(reserve) - len(suffix)
        try:
            fitted = fit_observation(observation, lambda text: len(text) <= room)
        except GoalDoesNotFitError as exc:
            # the budget is an estimate in characters: the goal goes whole and the server, which counts tokens,
            # decides (a refusal refits, then falls back, both counted); the goal is never cut
            fitted = FittedText(exc.text, exc.elided_turns)
        self.context_stats.record(fitted)
        return fitted.text + suffix

    def _refitting(self, attempt):
        """``attempt()`` builds its prompts (with the current :attr:`fit_scale`) and sends them; a server that
        refuses one for length shrinks the scale by :data:`REFIT_FACTOR` and the attempt is made again, at most
        ``max_refits`` times. Returns the attempt's result, or None when the server still refused (a fallback)."""
        for refit in range(self.max_refits + 1):
            try:
                return attempt()
            except ContextOverflowError:
                if refit == self.max_refits:
                    break
                self.context_stats.refits += 1
                self.fit_scale *= REFIT_FACTOR
        self.context_stats.fallbacks += 1
        return None

    # -- fast path ------------------------------------------------------------------------------------------
    def fast_scores(self, observations: Sequence[Any]) -> torch.Tensor:
        """``z = log P(yes) − log P(no)`` of the token after the fast prompt, the observations' requests sent
        concurrently: each candidate's log-prob forced in the server's tokens, else read from its top-k table. No
        gradient: the tensor is a constant."""
        if self.vocab is not None:
            return self._forced_fast_scores(observations)
        from steer_envs.llm.base import match_candidates

        def attempt():
            prompts = [self.prompt_text(o, FAST_QUESTION) for o in observations]
            return self.backend.top_logprobs(prompts, self.top_logprobs) if prompts else []

        tables = self._refitting(attempt)
        if tables is None:  # still too long after the refits: no evidence either way (z = 0 below)
            tables = [{} for _ in observations]
        zs = []
        for table in tables:
            found = match_candidates(table, [YES, NO])
            missing = [c.strip() for c in (YES, NO) if not any(t.strip() == c.strip() for t in table)]
            z = found[YES] - found[NO]
            if not torch.isfinite(torch.tensor(z)):  # an empty table: no evidence either way
                z = 0.0
            self.stats.fast_scores += 1
            self.stats.fast_candidate_missing += len(missing)
            self._log({"path": "fast", "z": z, "yes": found[YES], "no": found[NO], "missing": missing})
            zs.append(z)
        return torch.tensor(zs, dtype=torch.float32)

    def _forced_fast_scores(self, observations: Sequence[Any]) -> torch.Tensor:
        """The local steerer's z in the server's tokens: its prompt ids, then the yes and the no token forced."""
        vocab = self.vocab
        assert vocab is not None

        def attempt():
            prompts = [self.prompt_ids(o, FAST_QUESTION)[0] for o in observations]
            rows = [prompt + [candidate] for prompt in prompts for candidate in (vocab.yes_id, vocab.no_id)]
            return self.backend.continuation_logprobs(rows, [len(p) for p in prompts for _ in range(2)])

        scored = self._refitting(attempt) if observations else []
        zs = []
        for i in range(len(observations)):
            if scored is None:  # still too long after the refits: no evidence either way
                yes, no, z = None, None, 0.0
            else:
                yes, no = scored[2 * i][0], scored[2 * i + 1][0]
                z = yes - no
            self.stats.fast_scores += 1
            self._log({"path": "fast", "z": z, "yes": yes, "no": no, "missing": [], "fit": "tokens"})
            zs.append(z)
        return torch.tensor(zs, dtype=torch.float32)

    # -- slow path ------------------------------------------------------------------------------------------
    def _sampling(self, max_new_tokens: int, stop: tuple[str, ...], seed: int, greedy: bool):
        from steer_envs.llm.base import GenerationConfig

        return GenerationConfig(
            max_new_tokens=max_new_tokens, temperature=0.0 if greedy else self.temperature, stop=stop, seed=seed
        )

    def sample_slow(
        self, observation: Any, n: int, generator: torch.Generator, greedy: bool = False
    ) -> list[SlowSample]:
        seeds = [int(s) for s in torch.randint(0, 2**31 - 1, (n,), generator=generator)]
        outputs = self._refitting(lambda: [self._slow_output(observation, seed, greedy) for seed in seeds])
        if outputs is None:  # still too long after the refits: each sample is a pass (counted as a parse failure)
            outputs = ["" for _ in seeds]
        return [self._sample(observation, output) for output in outputs]

    def _slow_output(self, observation: Any, seed: int, greedy: bool) -> str:
        """One sample's raw output: the reasoning, then (when it holds no intervention line) the forced line. One
        request per sample, each with its own seed: n copies of one request under one seed would be n identical
        samples on servers that seed per request (vLLM); evaluation draws n = 1."""
        reserve = self.max_think_tokens + self.max_line_tokens + SLOW_MARGIN  # the second request's additions
        prompt = self.prompt_text(observation, SLOW_INSTRUCTION.format(names=", ".join(self.names)), reserve)
        think = self._sampling(self.max_think_tokens, (THINK_END,), seed, greedy)
        output = self.backend.generate([prompt], think)[0].text
        self.stats.slow_requests += 1
        if self.name_choice == "choice":
            return self._chosen_line(prompt, output, seed, greedy)
        if not _LINE.search(output):  # no intervention line yet: close the reasoning, ask for the line
            head = output + THINK_END + GRAMMAR_HEAD
            line = self.backend.generate(
                [prompt + head], self._sampling(self.max_line_tokens, ("\n",), seed + 1, greedy)
            )[0]
            output = head + line.text
            self.stats.slow_requests += 1
        return output

    def _chosen_line(self, prompt: str, think: str, seed: int, greedy: bool) -> str:
        """The reasoning (cut before any line of its own), ``</think>``, the grammar head and a NAME the server
        chooses among the allowed ones (structured output ``choice``: the tokens of other text are masked)."""
        match = _LINE.search(think)
        head = (think[: match.start()] if match else think) + THINK_END + GRAMMAR_HEAD
        name = self.backend.choose(
            prompt + head, self.names, self._sampling(self.max_line_tokens, (), seed + 1, greedy)
        )
        self.stats.slow_requests += 1
        return head + name

    def _sample(self, observation: Any, output: str) -> SlowSample:
        parsed = parse_intervention(output, self.names)
        self.stats.slow_samples += 1
        if not parsed.ok:
            self.stats.parse_failures += 1
        option = next((o for o in self.options if o.name == parsed.name), None)
        argument = ""
        if option is not None and option.needs_argument and self.choose_arguments:
            argument = parsed.argument or argument_candidates(observation, self.max_arguments)[0]
        rationale = output.split(THINK_END, 1)[0].strip() if THINK_END in output else ""
        text = option.render(observation, argument) if option is not None else PASS_NAME
        self._log(
            {
                "path": "slow",
                "output": output,
                "name": parsed.name or PASS_NAME,
                "argument": argument,
                "parsed": parsed.ok,
                "failure": parsed.failure,
            }
        )
        return SlowSample(
            option,
            argument,
            text,
            rationale,
            {"output": f"<think>{output}", "parsed": parsed.ok, "failure": parsed.failure},
        )

    def slow_logprobs(self, observation: Any, samples: Sequence[SlowSample]) -> torch.Tensor:
        raise _no_training("slow_logprobs (GRPO's re-scoring)")
