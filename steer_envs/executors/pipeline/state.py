"""The hidden state of one pipeline episode (deep-copied by forks; never shown to the steerer)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..sim.hops import Hop


@dataclass
class PipelineState:
    """``rng`` drives the roles' behaviour and is derived afresh for every agent turn from ``seed_base`` and the
    turn's index, so two branches of a fork draw the same numbers turn for turn wherever their histories agree
    (common random numbers: an ignored note changes nothing downstream). ``srng`` drives the responses to
    supervision (compliance, derailment), on a stream of its own."""

    rng: np.random.Generator
    srng: np.random.Generator
    seed_base: int
    hops: list[Hop]
    #: parametric knowledge: an answer without evidence would be right
    knows: bool
    # -- per-episode dispositions (each role's drift) ------------------------------------------------------------
    strict: bool  # the verifier over-rejects
    over_search: bool  # the searcher re-runs its first searches instead of progressing
    ignores_evidence: bool  # the summarizer answers from memory
    verbose: bool  # the summarizer pads its answer
    # -- planner ------------------------------------------------------------------------------------------------
    plan_ok: bool | None = None
    # -- searcher -----------------------------------------------------------------------------------------------
    hop: int = 0  # first unresolved hop; == len(hops) once the evidence is in hand
    findings: list[str] = field(default_factory=list)
    wrong_from: int | None = None  # first hop resolved from a distractor (fixation)
    seen_ids: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    round_queries: list[list[str]] = field(default_factory=list)
    #: (sentence, title) of the passages the searcher took as evidence, kept across rounds
    evidence_facts: list[tuple[str, str]] = field(default_factory=list)
    rounds: int = 0  # search rounds made
    # -- reader -------------------------------------------------------------------------------------------------
    extract_ok: bool = False
    answer: str | None = None  # the reader's latest extracted value
    answer_basis: tuple = ()  # the evidence state the answer was drawn for (redrawn when it changes)
    doubt: bool = False  # the claim was not accepted (a FAIL or a rejection): the reader looks again
    # -- supervision ------------------------------------------------------------------------------------------
    #: what notes set in motion for a role's next turn: role -> {effect: argument}
    effects: dict[str, dict[str, str]] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)  # interventions each role received
    # -- privileged log (analysis only) ------------------------------------------------------------------------
    over_rejections: int = 0  # verifier FAILs of a right claim
    steerer_rejections_of_right: int = 0
    derails: list[str] = field(default_factory=list)
    understood: list[tuple[str, str]] = field(default_factory=list)

    @property
    def evidence_in_hand(self) -> bool:
        return self.hop >= len(self.hops)

    def effect(self, role: str, name: str, argument: str = "") -> None:
        self.effects.setdefault(role, {})[name] = argument

    def take_effects(self, role: str) -> dict[str, str]:
        return self.effects.pop(role, {})
