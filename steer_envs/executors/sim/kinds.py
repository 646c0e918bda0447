"""Kind-specific drift (profile ``"dynamics": "kinds"``, the synthetic ``sim:drift1..3`` family).

The classic searcher (:mod:`.searcher`) drifts the way recorded agents do, and most of its drift is either short
(an agent wanders back on its own) or invisible (a premature answer comes with no sign before it), so a steerer that
reads only the transcript has little to act on beyond what a fixed rule already does. This searcher poses the
opposite situation on purpose, with four properties:

* **Persistence.** A drift lasts until a fitting note (or the end of the budget): profiles set ``drift_recover`` to 0.
* **Varying onset.** A drift starts with the profile's per-turn hazard, so on the same task it starts at different
  turns in different episodes; no fixed turn catches it.
* **A tell.** Each drifting turn shows its kind in behaviour with probability ``tell_clarity`` (:data:`TELLS`):
  ``redundant`` repeats an earlier query word for word, ``side_goal`` searches an entity from the results plus an
  aspect of it ("... early life"), ``never_answer`` writes no valid action, ``premature`` searches the whole question
  once before answering it without the second hop. Without the tell the turn looks like one of an agent on track (a
  rephrased query, a query that follows a lead) or like another kind (a rambling agent that repeats its last query).
  The ``<think>`` text stays the recorded agents' words for the observable situation (testbed rule 1).
* **One fitting note per kind** (:data:`FIT`): ``stop_repeating`` for ``redundant``, ``refocus`` for ``side_goal``,
  ``answer_now`` for ``never_answer``, ``keep_searching`` for ``premature``. Any other note, and any note to an agent
  on track, sets it back with probability ``misfit_cost`` (:func:`misfit`); it also costs its turn of context.

Which kinds can start where: ``redundant`` and ``never_answer`` once the evidence is in hand (the agent has what it
needs and does not commit), ``side_goal`` while a hop is open, ``premature`` while the second (or a later) hop is
open. Everything else (queries, retrieval, recognition, extraction, compliance) is the classic searcher's.
"""

from __future__ import annotations

from collections.abc import Callable

from ...notes import Reading
from ..base import TurnResult
from .searcher import SimSearcher

#: drift kind -> the one note intent that ends it
FIT: dict[str, str] = {
    "redundant": "stop_repeating",
    "side_goal": "refocus",
    "never_answer": "answer_now",
    "premature": "keep_searching",
}

DriftTurn = Callable[["KindDriftSearcher", bool], TurnResult]
#: drift kind -> the turn it takes (``tell``: whether the turn shows its kind)
TELLS: dict[str, DriftTurn] = {}


def tell(kind: str) -> Callable[[DriftTurn], DriftTurn]:
    def register(fn: DriftTurn) -> DriftTurn:
        TELLS[kind] = fn
        return fn

    return register


@tell("redundant")
def _redundant(sim: KindDriftSearcher, shows: bool) -> TurnResult:
    s = sim.state
    return sim._search(s.queries[-1] if shows else sim._reformulated_query())


@tell("side_goal")
def _side_goal(sim: KindDriftSearcher, shows: bool) -> TurnResult:
    return sim._search(sim.state.side_topic if shows else sim._reformulated_query(lead=True))


@tell("never_answer")
def _never_answer(sim: KindDriftSearcher, shows: bool) -> TurnResult:
    s = sim.state
    return sim._ramble() if shows or not s.queries else sim._search(s.queries[-1])


@tell("premature")
def _premature(sim: KindDriftSearcher, shows: bool) -> TurnResult:
    """With the tell, one search of the whole question, then the answer; without it, the answer at once."""
    s = sim.state
    if not shows:
        s.drift, s.premature = None, True
        return sim._answer()
    result = sim._search(sim.current_task.question)
    s.drift, s.premature = None, not sim.evidence_in_hand  # the check search may have found the missing hop
    return result


Fix = Callable[["KindDriftSearcher"], None]


def _fix_answer(sim: KindDriftSearcher) -> None:
    s = sim.state
    s.drift, s.pending, s.pending_arg = None, "answer_now", ""


def _fix_resume(sim: KindDriftSearcher) -> None:
    sim.state.drift = None  # the next turn searches the open hop again


def _fix_search_on(sim: KindDriftSearcher) -> None:
    s = sim.state
    s.drift, s.premature, s.pending = None, False, "keep_searching"


#: drift kind -> what its fitting note does
FIXES: dict[str, Fix] = {
    "redundant": _fix_answer,
    "never_answer": _fix_answer,
    "side_goal": _fix_resume,
    "premature": _fix_search_on,
}


def misfit(sim: KindDriftSearcher) -> None:
    """A note that does not fit sets the agent back: with the evidence in hand it doubts a right answer; with a hop
    open it loses its latest finding (or, with none yet, the next turn to working out what was meant). An agent about
    to answer without the evidence answers anyway."""
    s = sim.state
    s.understood.append("misfit")
    if sim.evidence_in_hand:
        s.extract_ok = False
    elif s.premature:
        return  # about to answer without the evidence: the answer it gives is the loss already
    elif s.findings:
        sim.undo_from(len(s.findings) - 1)
        s.pending = None  # the hop reopens; the next turn searches it (undo_from asked for a search anyway)
    else:
        s.pending = "confused"


class KindDriftSearcher(SimSearcher):
    """Executor spec ``sim:<profile>`` for a profile with ``"dynamics": "kinds"``; see the module docstring."""

    def kind(self) -> str | None:
        """The drift kind now (privileged): a drift, or a premature answer about to come."""
        s = self.state
        return s.drift or ("premature" if s.premature else None)

    def _turn(self) -> TurnResult:
        s = self.state
        if s.pending is not None or s.drift not in TELLS:
            return super()._turn()
        s.labels.append(s.drift)
        result = TELLS[s.drift](self, bool(s.rng.random() < self.params.tell_clarity))
        if result.kind != "answer":
            self._after_turn()
        return result

    def _after_turn(self) -> None:
        if not self.state.premature:  # the answer comes next turn: nothing else starts before it
            super()._after_turn()

    def _drift_applicable(self, in_hand: bool, distractors: list[str]) -> dict[str, bool]:
        s = self.state
        return {
            "redundant": in_hand and bool(s.queries),
            "never_answer": in_hand,
            "side_goal": not in_hand and bool(s.last_hit_ids),
            "premature": not in_hand and s.hop >= 1,
        }

    def _respond(self, reading: Reading) -> None:
        kind = self.kind()
        if kind is not None and reading.intent == FIT[kind]:
            FIXES[kind](self)
        elif self.state.rng.random() < self.params.misfit_cost:
            misfit(self)

    def hidden_situation(self) -> str:
        """Names the oracle's table knows: a kind that loops, or a premature answer about to come unseen."""
        kind = self.kind()
        if kind == "premature":
            return "premature_knows" if self.state.knows else "premature_unseen"
        return kind if kind in ("redundant", "side_goal", "never_answer") else super().hidden_situation()
