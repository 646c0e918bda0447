"""How the simulated searcher responds to a note it has read: the state-dependent effect of each intent.

Real recordings show how agents act unsupervised; none shows how they respond to guidance. So the responses are
an explicit model, written down here in one table and swept by ``steer-envs sensitivity`` (the probabilities are
profile parameters: ``compliance``, ``second_guess``, ``disruption``, ``confusion``, ``verify_skill``, ...). The
model's one principle is that a note helps where a real agent would be helped and costs where it would be
disrupted; no note is good in almost every state:

==================  ===========================================  ==================================================
intent              helps when                                   costs when
==================  ===========================================  ==================================================
answer_now          the evidence is in hand (a loop, a tangent)  the hop is unresolved: a guess from memory
stop_repeating      the agent repeats a search                   it is not repeating: read as "stop searching",
                                                                 it may answer before the evidence is in
refocus             the agent is on a side topic or rambling     it is on track between hops: taken literally, it
                                                                 searches the question again (``literal_reading``)
search_for X        X retrieves what the current hop needs       X is useless (a wasted turn); the evidence is
                                                                 already in hand (``second_guess_search``)
keep_searching      an answer would come before the evidence     the evidence is in hand: a wasted turn, and told
                                                                 that its evidence falls short the agent may drop
                                                                 a right answer (``second_guess_search``)
verify              evidence was retrieved but not recognised;   the answer in hand is right: challenged, the
                    the extraction was wrong; a fixation         agent may talk itself out of it; nothing
                                                                 relevant was retrieved: re-reading finds nothing
                                                                 (it searches on only with ``verify_searches``)
backtrack           the agent follows a distractor entity        the entity was right: a correct finding is lost
plan                (lowers the drift hazard; ends rambling)     (nothing)
reject              the proposed answer is wrong                 it was right (over-rejection)
none (no meaning)   never                                        it confuses the agent a little (``confusion``)
==================  ===========================================  ==================================================

Independently of the intent, every note after the first may derail the agent (``disruption`` x earlier notes):
it loses its thread, answers hastily to comply, or wanders off. A note is followed with probability
``compliance``; an ignored note still costs its turn of context (``intervention_turn_cost``).

Each response is a function registered in :data:`RESPONSES` by intent name; it changes the searcher's hidden
state only, and the consequences play out through the ordinary turn mechanics (retrieval, recognition,
extraction) of :class:`~.searcher.SimSearcher`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...notes import Reading


class SearcherView(Protocol):
    """What a response reads and changes of the searcher it models (:class:`~.searcher.SimSearcher` is one).

    Declared here, not imported: the searcher imports this table, and a response annotated with the searcher's
    class made the two modules import each other (for typing only, still a circle)."""

    #: the benchmark's profile parameters (``SimProfile``)
    params: Any
    #: the task being searched (``Task``)
    task: Any

    #: the hidden state (``searcher.SimState``: hops, findings, drift, rng, ...)
    @property
    def state(self) -> Any: ...

    @property
    def evidence_in_hand(self) -> bool: ...

    def resolve(self, pid: str, finding: str | None = None) -> None: ...

    def start_side_goal(self) -> None: ...

    def undo_from(self, index: int | None) -> None: ...


Response = Callable[["SearcherView", Reading], None]
RESPONSES: dict[str, Response] = {}
LOOP_DRIFTS = ("redundant", "side_goal", "never_answer")


def response(intent: str) -> Callable[[Response], Response]:
    def register(fn: Response) -> Response:
        RESPONSES[intent] = fn
        return fn

    return register


@response("answer_now")
def _answer_now(sim: SearcherView, reading: Reading) -> None:
    s = sim.state
    if s.drift in LOOP_DRIFTS:
        s.drift = None
    s.pending, s.pending_arg = "answer_now", ""


@response("stop_repeating")
def _stop_repeating(sim: SearcherView, reading: Reading) -> None:
    s, p = sim.state, sim.params
    if s.drift == "redundant":
        s.drift = None
        s.pending = "answer_now"
    elif s.drift == "side_goal":
        if s.rng.random() < 0.5:
            s.drift = None
    elif s.drift != "never_answer" and s.rng.random() < p.literal_reading:
        s.premature = False
        s.pending = "answer_now"  # not repeating: taken as "stop searching"


@response("refocus")
def _refocus(sim: SearcherView, reading: Reading) -> None:
    s, p = sim.state, sim.params
    if s.drift in ("side_goal", "never_answer"):
        s.drift = None
    elif s.drift == "redundant" and s.rng.random() < 0.5:
        s.drift = None
    elif s.drift is None and not sim.evidence_in_hand and s.findings and s.rng.random() < p.literal_reading:
        # on track between hops: taken literally, it goes back to the question and leaves the hop it was on
        s.premature = False
        s.pending, s.pending_arg = "search_for", sim.task.question


@response("search_for")
def _search_for(sim: SearcherView, reading: Reading) -> None:
    s = sim.state
    if s.drift in LOOP_DRIFTS:
        s.drift = None
    s.premature = False
    s.pending, s.pending_arg = "search_for", reading.argument


@response("keep_searching")
def _keep_searching(sim: SearcherView, reading: Reading) -> None:
    s = sim.state
    if s.drift in ("side_goal", "never_answer"):
        s.drift = None
    if s.drift == "redundant":
        return  # it was searching already: the loop goes on
    s.premature = False
    s.pending = "keep_searching"


@response("verify")
def _verify(sim: SearcherView, reading: Reading) -> None:
    """Re-read everything retrieved: a second chance to recognise evidence, re-extract, or notice a fixation."""
    s, p, rng = sim.state, sim.params, sim.state.rng
    if s.wrong_from is not None:
        if rng.random() < p.verify_skill:
            sim.undo_from(s.wrong_from)
        return
    while not sim.evidence_in_hand:
        found = [pid for pid in s.seen_ids if pid in s.hops[s.hop].target_ids]
        if not found or rng.random() >= p.verify_skill:
            break
        sim.resolve(found[0])
    if sim.evidence_in_hand:
        if not s.extract_ok and rng.random() < p.verify_skill:
            s.extract_ok = True
        elif s.extract_ok and rng.random() < p.second_guess:
            s.extract_ok = False  # talked itself out of a right answer
        if s.drift == "redundant":
            s.drift = None
        s.pending = "answer_now"
    elif rng.random() < p.verify_searches:
        s.premature = False  # re-reading shows the evidence does not answer the question yet: it searches on
        if s.drift == "never_answer":
            s.drift = None
        s.pending = "keep_searching"


@response("backtrack")
def _backtrack(sim: SearcherView, reading: Reading) -> None:
    s = sim.state
    if s.wrong_from is not None:
        sim.undo_from(s.wrong_from)
    elif s.findings:  # misguided: abandons a correct finding
        sim.undo_from(len(s.findings) - 1)


@response("plan")
def _plan(sim: SearcherView, reading: Reading) -> None:
    s, p = sim.state, sim.params
    s.hazard_factor *= p.plan_effect
    if s.drift == "never_answer":
        s.drift = None


@response("reject")
def _reject(sim: SearcherView, reading: Reading) -> None:
    """A rejected answer: re-verify; a right answer may be abandoned (over-rejection hurts)."""
    s, p, rng = sim.state, sim.params, sim.state.rng
    s.proposed = True
    if sim.evidence_in_hand and s.wrong_from is None:
        if s.extract_ok:
            s.extract_ok = bool(rng.random() >= p.second_guess)
        else:
            s.extract_ok = bool(rng.random() < p.verify_skill * p.extract_skill)
        s.pending = "answer_now"
        return
    if sim.evidence_in_hand:  # fixated: the agent may notice
        if rng.random() < p.verify_skill:
            sim.undo_from(s.wrong_from)
    else:
        s.knows = s.knows and rng.random() < p.verify_skill
    s.premature = False
    s.pending = "keep_searching"


@response("none")
def _confused(sim: SearcherView, reading: Reading) -> None:
    """A note that asks for nothing actionable: the agent may lose a turn working out what was meant."""
    s, p = sim.state, sim.params
    if s.rng.random() < p.confusion:
        s.pending = "confused"


def derail(sim: SearcherView) -> None:
    """Over-supervision: one note too many and the agent loses its thread, answers hastily to comply, or wanders
    off to a side topic (the paper's turn inflation and harm from intervening at every step)."""
    s = sim.state
    s.understood.append("derailed")
    effect = ("lose_thread", "hasty_answer", "side_goal")[int(s.rng.integers(3))]
    if effect == "lose_thread" and s.findings:
        sim.undo_from(len(s.findings) - 1)
    elif effect == "side_goal" and s.last_hit_ids and s.drift is None:
        sim.start_side_goal()
        s.pending = None
    else:
        s.pending, s.pending_arg = "answer_now", ""
