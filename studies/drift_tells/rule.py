"""The hand-written rung of the drift family: a rule a person writes from the family's card, with no learning.

The card (``docs/results_drift.md``) says how each drift kind shows in the executor's latest turn and which note
ends it. The rule reads the latest turn for exactly those four tells and sends the note the card pairs with each;
otherwise it passes. Nothing in it is fitted or tuned:

========================================================================  ==================  =================
the latest executor turn                                                  the card's kind     the note it sends
========================================================================  ==================  =================
a search of a title from earlier results plus words the question lacks    ``side_goal``       ``refocus``
a search that repeats an earlier query word for word                      ``redundant``       ``stop_repeating``
a search of the whole question, word for word, after a first search       ``premature``       ``keep_searching``
a turn with no valid action (the invalid-action reply follows it)         ``never_answer``    ``answer_now``
========================================================================  ==================  =================

The checks run in the table's order. Two details follow the card's wording and were checked once on dev (40
``sim:drift1`` dev episodes, the rule's reading against the simulator's hidden kind) before any test run: a side
goal lasts until its note, so its search repeats, and the side-goal check comes before the repeat check; a premature
answer comes while the second hop is open, so the question searched as the first query is not read as one.

It sends at most :data:`MAX_NOTES` notes an episode, the learnable ceiling's cap (``baselines.ladder.GainPolicy``).
A tell can mislead it: an agent on track may search a title plus a word, a rambling one repeats its last query
(the card says so); those cases are part of what the rung measures.

The rule is registered as the method ``drift_tells`` (:func:`register`), through the public plug-in path a user's
method takes (``baselines.registry.register_method``), so the harness evaluates it as it does any method.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents.steering.features import content_words, split_observation, words
from agents.steering.interventions import InterventionOption
from baselines.base import STEERING_ENV, MethodContext
from baselines.options import MethodOptions
from baselines.registry import METHODS, Method, register_method
from baselines.simple import PASS, catalogue_options
from steer_envs.executors.protocol import INVALID_ACTION_REPLY, information_titles, searched_queries

#: the method name the study registers
NAME = "drift_tells"
#: notes per episode at most: the learnable ceiling's cap
MAX_NOTES = 3
#: the card's kind -> the note that ends it
NOTE_FOR = {
    "redundant": "stop_repeating",
    "premature": "keep_searching",
    "side_goal": "refocus",
    "never_answer": "answer_now",
}


def _normal(text: str) -> str:
    return " ".join(words(text))


def read_tell(goal: str, transcript: str) -> str | None:
    """The kind whose tell the latest executor turn shows, else None (see the module's table)."""
    tail = transcript.rstrip()
    if tail.endswith(INVALID_ACTION_REPLY.strip()):
        return "never_answer"
    if not tail.endswith("</information>"):
        return None  # no turn yet, or the last thing in the transcript is a note
    queries = [_normal(q) for q in searched_queries(transcript)]
    if not queries:
        return None
    last = queries[-1]
    earlier_titles = [_normal(t) for block in information_titles(transcript)[:-1] for t in block]
    extra = content_words(last) - content_words(goal)
    for title in earlier_titles:
        if title and last.startswith(title + " ") and extra - content_words(title):
            return "side_goal"  # first: a side goal persists, so its search repeats too
    if last in queries[:-1]:
        return "redundant"
    if last == _normal(goal) and len(queries) > 1:
        return "premature"  # the second hop is open: an agent's first search may be the question itself
    return None


class TellRule:
    """Send the note the card pairs with the tell the latest turn shows; pass otherwise (:func:`read_tell`)."""

    name = NAME

    def __init__(self, options: Sequence[InterventionOption]) -> None:
        by_name = {option.name: option for option in options}
        missing = sorted(set(NOTE_FOR.values()) - set(by_name))
        if missing:
            raise ValueError(f"{NAME} needs the drift family's notes in the catalogue; missing: {', '.join(missing)}")
        self.index = {kind: by_name[note].index for kind, note in NOTE_FOR.items()}
        self.run_info = {"reads": "the latest turn's tell, as the card describes it", "max_notes": MAX_NOTES}
        self._sent = 0

    def reset(self, seed: int | None = None) -> None:
        self._sent = 0

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> int:
        if self._sent >= MAX_NOTES:
            return PASS
        goal, transcript, _, _ = split_observation(observation)
        kind = read_tell(goal, transcript)
        if kind is None:
            return PASS
        self._sent += 1
        return self.index[kind]


@dataclass(frozen=True)
class TellRuleOptions(MethodOptions):
    """The rule has no options: nothing in it is tuned."""


def build(context: MethodContext) -> TellRule:
    return TellRule(catalogue_options(context))


def register() -> None:
    """Register ``drift_tells`` (once per process)."""
    if NAME not in METHODS:
        register_method(
            Method(
                name=NAME,
                help="the drift family's hand-written rung: the note the card pairs with the latest turn's tell",
                env_id=STEERING_ENV,
                build=build,
                options=TellRuleOptions,
                group="rule",
            )
        )
