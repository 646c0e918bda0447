"""What a policy did that its outcome does not show: counters per episode, summed per method, said under the table.

A steerer whose slow path wrote nothing parseable still "passes", and a prompt that lost its oldest turns to fit the
model's context still scores: the F1 cannot tell a reader that the row was measured on degraded decisions. So a
policy may keep cumulative counters and expose them as ``counters() -> Mapping[str, int]``;
:func:`~steer_envs.episodes.run_episode` stores each episode's change (:func:`counter_change`) in the record's
``counters``, the harness sums them per method into ``metrics.json`` and writes a line under the table for every
counter that has words here (:func:`counter_notes`). Counts kept per episode, not per process, so a resumed run
adds up exactly as an uninterrupted one.

:data:`COUNTER_WORDS` is the one home of how a counter reads. A counter without words is still recorded and summed;
:func:`register_counter_words` gives a plugin method's counters their sentence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import SteerEnvsError


@dataclass(frozen=True)
class CounterWords:
    """How a counter reads under a table: ``{count} {words}``, or ``{count} of {total} {words}`` when ``of`` names
    the counter that holds its total (``parse_failures`` of ``slow_samples``)."""

    words: str
    of: str | None = None


#: counter name -> how it reads; the counters a steerer keeps (``agents.steering``) and their totals
COUNTER_WORDS: dict[str, CounterWords] = {
    "parse_failures": CounterWords(
        "slow-path outputs held no valid intervention (each read as a pass)", "slow_samples"
    ),
    "fast_candidate_missing": CounterWords(
        "fast-path answers (yes/no) missing from the server's top log-probs (each given the table's floor)",
        "fast_scores",
    ),
    "elided_prompts": CounterWords("prompts lost their oldest turns to fit the model's context", "prompts"),
    "cut_prompts": CounterWords("prompts lost the start of their latest turn too", "prompts"),
    "refits": CounterWords("prompts the server refused for length were fitted again, tighter"),
    "fallbacks": CounterWords(
        "decisions the server still refused for length after the refits (taken as no evidence, or a pass)"
    ),
}


def register_counter_words(name: str, words: str, of: str | None = None) -> None:
    """Give a counter of your policy its sentence under the table (``of``: the counter holding its total)."""
    if not name.isidentifier():
        raise SteerEnvsError(f"a counter name is a Python identifier (it is a JSON key too), got {name!r}")
    COUNTER_WORDS[name] = CounterWords(words, of)


def policy_counters(policy: Any) -> dict[str, int]:
    """The policy's cumulative counters now (``{}`` for a policy that keeps none)."""
    read = getattr(policy, "counters", None)
    if read is None:
        return {}
    counts = read()
    if not isinstance(counts, Mapping) or not all(isinstance(v, int) for v in counts.values()):
        raise SteerEnvsError(
            f"{type(policy).__name__}.counters() must return a mapping of counter name -> int, got {counts!r}"
        )
    return dict(counts)


def counter_change(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """What changed between two readings, zero changes left out (a record stays short when nothing happened)."""
    change = {name: after[name] - before.get(name, 0) for name in after}
    return {name: n for name, n in sorted(change.items()) if n}


def sum_counters(rows: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The counters of many episodes, summed by name."""
    total: dict[str, int] = {}
    for row in rows:
        for name, n in row.items():
            total[name] = total.get(name, 0) + int(n)
    return dict(sorted(total.items()))


def counter_sentence(totals: Mapping[str, int]) -> str:
    """The counters that have words and a non-zero count, as one sentence (``""`` when none)."""
    parts = []
    for name, words in COUNTER_WORDS.items():
        n = totals.get(name, 0)
        if not n:
            continue
        total = totals.get(words.of) if words.of else None
        parts.append(f"{n} of {total} {words.words}" if total else f"{n} {words.words}")
    return "; ".join(parts)


def counter_notes(totals_by_method: Mapping[str, Mapping[str, int]]) -> str:
    """One italic line per method whose counters say something (the lines under a results table)."""
    lines = []
    for method, totals in totals_by_method.items():
        sentence = counter_sentence(totals)
        if sentence:
            lines.append(f"\n*{method}: {sentence}.*\n")
    return "".join(lines)


__all__ = [
    "COUNTER_WORDS",
    "CounterWords",
    "counter_change",
    "counter_notes",
    "counter_sentence",
    "policy_counters",
    "register_counter_words",
    "sum_counters",
]
