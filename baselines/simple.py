"""Supervision baselines that need no learning: no supervision, always intervene, random at a matched rate,
and a rule-based drift detector.

They pick interventions from the environment's own catalogue (``env.unwrapped.catalogue``), by index in
``discrete`` action mode, so every method shares one action vocabulary and differs only in *when* and *which*.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.steering.features import split_observation
from agents.steering.interventions import InterventionOption, options_from_catalogue
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.protocol import searched_queries

from .base import MethodContext
from .options import MethodOptions, method_option

PASS = 0


@dataclass(frozen=True)
class RandomOptions(MethodOptions):
    p: float | None = method_option(
        None, "intervention probability per decision (empty: the measured rate of `match`)", ge=0, le=1
    )
    match: str = method_option(
        "steering_rl",
        "the method (label or name) of the same run folder whose interventions per decision p matches when p is empty",
    )


@dataclass(frozen=True)
class AlwaysOptions(MethodOptions):
    option: str = method_option(
        "refocus", "the catalogue option sent at every decision (empty: the first about the goal, focus or answer)"
    )


@dataclass(frozen=True)
class DriftRuleOptions(MethodOptions):
    turns: int = method_option(6, "from this executor turn on, one answer_now nudge (once per episode)", ge=0)


def catalogue_options(context: MethodContext, env_id: str | None = None) -> list[InterventionOption]:
    """The intervention options (catalogue entries after ``pass``) of the env this context builds."""
    from .base import STEERING_ENV

    env = context.make_env(env_id or STEERING_ENV)
    try:
        return options_from_catalogue(env.unwrapped.catalogue)
    finally:
        env.close()


def pick_option(options: Sequence[InterventionOption], *keywords: str) -> InterventionOption:
    """The first option whose name or template mentions one of ``keywords`` (in keyword order), else the first."""
    for keyword in keywords:
        for option in options:
            if keyword in option.name.lower() or keyword in option.template.lower():
                return option
    return options[0]


class NoSupervision:
    """Always pass: the frozen executor on its own (the reference row of every table)."""

    name = "no_supervision"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        return PASS


class AlwaysIntervene:
    """Intervene at every decision point with one fixed catalogue option (the paper's 'every hand-off' row)."""

    name = "always"

    def __init__(self, option: InterventionOption) -> None:
        self.option = option
        self.run_info = {"option": option.name}

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        return self.option.index


class RandomIntervention:
    """Intervene with probability ``p`` per decision, with a uniformly drawn catalogue option.

    With ``p`` matched to a trained steerer's interventions per decision, this isolates *where* interventions
    land from *how many* there are: the gap to the steerer is the value of choosing the states.
    """

    name = "random"

    def __init__(self, options: Sequence[InterventionOption], p: float) -> None:
        if not 0.0 <= p <= 1.0:
            raise SteerEnvsError(f"random intervention probability p must be in [0, 1], got {p}")
        self.options = list(options)
        self.p = p
        self.run_info = {"p": round(p, 6)}
        self.reset(0)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng([0 if seed is None else seed, 0xBA5E])

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        if self.rng.random() < self.p:
            return self.options[int(self.rng.integers(len(self.options)))].index
        return PASS


def _norm_query(q: str) -> str:
    return " ".join(sorted(set(re.findall(r"[a-z0-9]+", q.lower()))))


class DriftRule:
    """A hand-written drift detector: intervene when the last query repeats an earlier one (the paper's
    'searches the same film three more times'), or when the turn count passes a threshold without an answer.

    At most one intervention per trigger kind per episode, so it cannot nag the executor into the budget.
    """

    name = "drift_rule"

    def __init__(self, repeat_option: InterventionOption, late_option: InterventionOption, turn_threshold: int) -> None:
        self.repeat_option = repeat_option
        self.late_option = late_option
        self.turn_threshold = turn_threshold
        self.run_info = {
            "repeat_option": repeat_option.name,
            "late_option": late_option.name,
            "turn_threshold": turn_threshold,
        }
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.fired: set[str] = set()
        self.flagged_queries = 0

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        _, transcript, turn, _ = split_observation(observation)
        queries = [_norm_query(q) for q in searched_queries(transcript)]
        repeated = len(queries) >= 2 and queries[-1] in queries[:-1]
        if repeated and len(queries) > self.flagged_queries:
            self.flagged_queries = len(queries)
            return self.repeat_option.index
        if turn >= self.turn_threshold and "late" not in self.fired:
            self.fired.add("late")
            return self.late_option.index
        return PASS


# -- builders (listed in baselines.methods) ---------------------------------------------------------------------
def build_no_supervision(context: MethodContext) -> NoSupervision:
    return NoSupervision()


def build_always(context: MethodContext) -> AlwaysIntervene:
    options = catalogue_options(context)
    choice = context.options_of(AlwaysOptions).option
    if choice:
        matches = [o for o in options if o.name == choice]
        if not matches:
            raise SteerEnvsError(
                f"always: no catalogue option {choice!r}; options: {', '.join(o.name for o in options)}"
            )
        return AlwaysIntervene(matches[0])
    return AlwaysIntervene(pick_option(options, "goal", "focus", "answer"))


def build_random(context: MethodContext) -> RandomIntervention:
    options = catalogue_options(context)
    chosen = context.options_of(RandomOptions)
    p = chosen.p
    if p is None:
        target = chosen.match
        p_measured = context.measured_rate(target)
        if p_measured is None:
            raise SteerEnvsError(
                f"random: cannot match the intervention rate of {target!r}: it has no episodes in this run folder; "
                f"evaluate {target!r} first, or give the rate explicitly (random:p=0.1)"
            )
        p = p_measured
    return RandomIntervention(options, p)


def build_drift_rule(context: MethodContext) -> DriftRule:
    options = catalogue_options(context)
    return DriftRule(
        repeat_option=pick_option(options, "repeat", "different", "new", "next"),
        late_option=pick_option(options, "answer", "commit", "final"),
        turn_threshold=context.options_of(DriftRuleOptions).turns,
    )
