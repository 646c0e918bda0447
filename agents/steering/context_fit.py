"""Fitting a steerer's prompt to its model's context: the goal kept, the oldest turns elided, the count kept.

A steerer reads ``O(g, s_t)`` (the goal and the executor's transcript, :func:`steer_envs.envs.observation_text`)
followed by its question. Transcripts grow with every turn, and a prompt longer than the steerer's model's context
is refused (a served model answers HTTP 400) or, worse, silently cut where the cut hurts most. Both steerers fit
their prompts here, so they elide the same way:

* the goal, the counters and the question always stay (they say what is being supervised and what to answer);
* whole **turns** are elided from the oldest on (the latest turns are what a supervision decision is about), and a
  visible marker (:data:`ELISION_MARKER`) says how many, so the model knows the transcript is not the whole story;
* only when the latest turn alone does not fit is its start cut too (the marker then ends in ``...``);
* the goal is never cut: when not even the goal, the counters and the marker fit, :class:`GoalDoesNotFitError`
  carries that text, so the caller can say how large a context it needs (a supervisor that cannot read the goal
  is not supervising it).

What "fits" means is the caller's. Counted in tokens, :func:`fit_prompt_ids` builds the prompt both steerers score
(the tokenizer's prefix such as BOS, the fitted text, the question, each tokenised apart): the local causal-LM
steerer with its tokenizer (:class:`~agents.steering.causal_lm.CausalLMSteerer`), the served one with the server's
(``POST /tokenize``), so a served model reads exactly the ids the local one does
(:class:`~agents.steering.served.ServedSteerer`). A server that cannot tokenise has its tokens estimated from
characters against its ``context_length``, refitted tighter when the server still refuses. Turns are split by
:func:`split_turns`, on the boundaries the Search-R1 protocol and the hand-off history write, so no turn is ever
half-elided except the last resort above.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from steer_envs.errors import SteerEnvsError
from steer_envs.executors.protocol import INVALID_ACTION_REPLY

#: the tokens a steerer's prompt may take by default (the observation fitted into it, the question included)
MAX_PROMPT_TOKENS = 384
#: the text whose tokens with and without special tokens show what a tokenizer puts before a prompt
PREFIX_PROBE = "Question"
#: what stands where elided turns were (``{n}``: how many; ``{s}``: the plural's "s")
ELISION_MARKER = "[... {n} earlier turn{s} elided to fit the model's context ...]\n"
#: where a turn of the Search-R1 protocol ends: after its ``<information>`` block, a guidance note or rejection,
#: the invalid-action reply (matched whole: it quotes the tags), or an answer (with the whitespace that follows);
#: and before each line of the hand-off history (``[i] sender -> receiver: ...``)
_TURN_END = re.compile(
    r"(?:" + re.escape(INVALID_ACTION_REPLY.strip()) + r"|</information>|</guidance>|</answer>)"
    r"[ \t]*\n*|\n(?=\[\d+\] )"
)


@dataclass(frozen=True)
class FittedText:
    """A fitted observation: ``text`` (what the model reads before the question), how many whole turns were
    elided, and whether the start of the latest kept turn (or the text's end) had to be cut too."""

    text: str
    elided_turns: int = 0
    cut: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.elided_turns or self.cut)


def split_turns(transcript: str) -> list[str]:
    """The transcript's turns in order; ``"".join(split_turns(t)) == t`` (nothing is lost or added)."""
    turns, start = [], 0
    for match in _TURN_END.finditer(transcript):
        if match.end() > start:
            turns.append(transcript[start : match.end()])
            start = match.end()
    if start < len(transcript):
        turns.append(transcript[start:])
    return turns


def elision_marker(n: int) -> str:
    return ELISION_MARKER.format(n=n, s="" if n == 1 else "s")


def _render(observation: Any, transcript: str) -> str:
    from steer_envs.envs import observation_text

    if isinstance(observation, Mapping):
        return observation_text({**observation, "transcript": transcript})
    return transcript


def _transcript_of(observation: Any) -> str:
    return str(observation.get("transcript", "")) if isinstance(observation, Mapping) else str(observation)


def _largest(low: int, high: int, ok: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``[low, high]`` with ``ok(k)`` (``ok`` true up to some point, then false), or
    ``low - 1`` when none."""
    best = low - 1
    while low <= high:
        mid = (low + high) // 2
        if ok(mid):
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def fit_observation(observation: Any, fits: Callable[[str], bool]) -> FittedText:
    """The observation's text with as many of its latest turns as ``fits`` accepts (see the module docstring).

    ``fits(text)`` says whether ``text`` (the observation text alone; the caller accounts for its question and the
    tokens it will generate) fits; it must be monotone (a shorter transcript never fits worse). Deterministic: the
    same observation and ``fits`` give the same text, which the causal-LM steerer relies on to re-score samples."""
    full = _render(observation, _transcript_of(observation))
    if fits(full):
        return FittedText(full)
    turns = split_turns(_transcript_of(observation))

    def keeping(kept: int) -> str:
        elided = len(turns) - kept
        return _render(observation, elision_marker(elided) + "".join(turns[elided:]))

    kept = _largest(1, len(turns) - 1, lambda k: fits(keeping(k)))
    if kept >= 1:
        return FittedText(keeping(kept), len(turns) - kept)
    last = turns[-1] if turns else ""
    marker = elision_marker(len(turns) - 1)

    def tail(chars: int) -> str:
        return _render(observation, marker + "..." + last[len(last) - chars :])

    chars = _largest(1, len(last) - 1, lambda c: fits(tail(c)))
    if chars >= 1:
        return FittedText(tail(chars), len(turns) - 1, cut=True)
    bare = _render(observation, elision_marker(len(turns)) if turns else "")  # the goal and the marker only
    if fits(bare):
        return FittedText(bare, len(turns))
    raise GoalDoesNotFitError(bare, len(turns))


class GoalDoesNotFitError(SteerEnvsError):
    """Not even the goal (with the counters and the elision marker) fits the prompt's room. ``text`` is the smallest
    observation text a prompt may hold; callers measure it and name the context they need."""

    def __init__(
        self, text: str, elided_turns: int = 0, message: str | None = None, prompt_tokens: int | None = None
    ) -> None:
        self.text = text
        self.elided_turns = elided_turns
        #: the tokens of the smallest prompt (goal, counters, marker, question), where the caller counted them
        self.prompt_tokens = prompt_tokens
        super().__init__(
            message or f"the steerer's prompt has no room for the goal ({len(text)} characters with the counters)"
        )


def special_prefix(with_special: list[int], plain: list[int]) -> list[int]:
    """The ids a tokenizer puts before a text: ``with_special`` (a short text tokenised with the special tokens)
    up to where ``plain`` (the same text without them) begins. BOS for Gemma- and Llama-style tokenizers, nothing
    for GPT-2- and Qwen-style ones, as an inference engine prefixes a text prompt."""
    for start in range(len(with_special) - len(plain) + 1):
        if with_special[start : start + len(plain)] == plain:
            return with_special[:start]
    return []


def prompt_token_budget(max_prompt_tokens: int, context_length: int | None, generated: int) -> int:
    """Tokens a prompt may take: ``max_prompt_tokens``, capped by the model's context less the ``generated`` tokens
    asked for and appended after the prompt (both steerers' budget, so both fit a prompt alike)."""
    if context_length is None:
        return max_prompt_tokens
    return min(max_prompt_tokens, context_length - generated)


def fit_prompt_ids(
    observation: Any, suffix: list[int], prefix: list[int], budget: int, encode: Callable[[str], list[int]]
) -> tuple[list[int], FittedText]:
    """``prefix + encode(fitted text) + suffix`` in at most ``budget`` tokens, and the fitted text
    (:func:`fit_observation`, each candidate text tokenised once). The text and the suffix are tokenised apart, as
    both steerers score them. Raises :class:`GoalDoesNotFitError` carrying the smallest prompt's token count."""
    room = budget - len(suffix) - len(prefix)
    seen: dict[str, list[int]] = {}

    def ids(text: str) -> list[int]:
        if text not in seen:
            seen[text] = encode(text)
        return seen[text]

    try:
        fitted = fit_observation(observation, lambda text: len(ids(text)) <= room)
    except GoalDoesNotFitError as exc:
        tokens = len(ids(exc.text)) + len(suffix) + len(prefix)
        raise GoalDoesNotFitError(exc.text, exc.elided_turns, prompt_tokens=tokens) from None
    return prefix + ids(fitted.text) + suffix, fitted


def goal_refusal(
    exc: GoalDoesNotFitError, budget: int, max_prompt_tokens: int, context_length: int | None, generated: int
) -> GoalDoesNotFitError:
    """The refusal of a steerer that cannot read an episode's goal, with the numbers: the smallest prompt's tokens,
    the budget it missed and the context that would hold it (``generated``: tokens the steerer asks for after it)."""
    needed = exc.prompt_tokens if exc.prompt_tokens is not None else budget + 1
    limit = f"max_prompt_tokens {max_prompt_tokens}"
    if context_length is not None:
        limit += f", the model's context {context_length} less {generated} generated"
    return GoalDoesNotFitError(
        exc.text,
        exc.elided_turns,
        f"the steerer cannot read this episode's goal: the goal with its counters and question take "
        f"{needed} tokens, and a prompt may have {budget} ({limit}). The goal is never cut; "
        f"use a model whose context holds at least {needed + generated} tokens (and max_prompt_tokens "
        f">= {needed}), or fewer think tokens",
        prompt_tokens=needed,
    )


@dataclass
class ContextStats:
    """How often a steerer's prompts had to be fitted: ``prompts`` built, ``elided_prompts`` among them that lost
    turns (``elided_turns`` in all), ``cut_prompts`` that lost part of a turn too; for a served steerer also
    ``refits`` (a server refused a fitted prompt, so it was fitted again tighter) and ``fallbacks`` (still refused
    after the refits: the decision fell back to "no evidence" / pass instead of aborting the run)."""

    prompts: int = 0
    elided_prompts: int = 0
    elided_turns: int = 0
    cut_prompts: int = 0
    refits: int = 0
    fallbacks: int = 0

    def record(self, fitted: FittedText) -> None:
        self.prompts += 1
        self.elided_prompts += int(fitted.elided_turns > 0)
        self.elided_turns += fitted.elided_turns
        self.cut_prompts += int(fitted.cut)

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


__all__ = [
    "ELISION_MARKER",
    "MAX_PROMPT_TOKENS",
    "PREFIX_PROBE",
    "ContextStats",
    "FittedText",
    "GoalDoesNotFitError",
    "elision_marker",
    "fit_observation",
    "fit_prompt_ids",
    "goal_refusal",
    "prompt_token_budget",
    "special_prefix",
    "split_turns",
]
