"""How a simulated role responds to a note (or to a rejection's feedback): the state-dependent effect of each
intent of the ``handoff`` set, per role.

No recording shows a pipeline being supervised, so this table is an explicit model whose free parameters are profile
keys (``compliance``, ``second_guess``, ``verify_skill``, ``literal_reading``, ``confusion``, ``disruption``): the
assumptions a sensitivity sweep (``steer-envs sensitivity``) varies. Its principle is the single searcher's: a note
helps where a real role would be helped and costs where it would be disrupted; no note is good in almost every state.

==============  ============================================  ================================================
role / intent   helps when                                    costs when
==============  ============================================  ================================================
verifier:       the claim is right and the verifier FAILs it  the claim is wrong (a wrong answer goes through)
accept          (over-rejection)
verifier:       the claim is wrong and unsupported            the claim is right (induced over-rejection)
verify / more
reader: verify  the extraction was wrong                      it was right (``second_guess``)
reader: accept  a FAIL would make it drop a right answer      its answer was wrong (it keeps it)
searcher: more  the evidence is missing                       (a wasted search; the loop goes on)
searcher:       it repeats its first searches (fixation)      it was progressing: read as "stop searching"
stop_repeating                                                (``literal_reading``)
searcher:       it follows a distractor entity                the entity was right: a finding is lost
backtrack
planner:        a multi-hop plan was one undivided step       (nothing)
decompose
summarizer:     it ignores the evidence, or defers after a    (nothing: it answers with the claim; a wrong
use_evidence    FAIL                                          claim stays wrong)
summarizer:     its answer is padded                          (nothing)
concise
any / none      never                                         confusion: the role's next turn is muddled
==============  ============================================  ================================================

A rejection first has its own effect on the sender (``rejected``): a planner writes a new plan, a reader looks
again (a right answer may be dropped, a wrong one fixed), a verifier re-decides (a rejected PASS tends to become a
FAIL), a summarizer reconsiders. Every intervention a role receives after its first may derail it
(``disruption`` x earlier ones): the planner's plan breaks, the searcher loses a finding, the reader's value goes
wrong, the verifier turns strict, the summarizer answers from memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...notes import Reading

if TYPE_CHECKING:  # the pipeline as these functions use it, not pipeline.py (which imports this module)
    from .host import PipelineHost as Pipeline

Response = Callable[["Pipeline", str, Reading], None]
RESPONSES: dict[tuple[str, str], Response] = {}
ALL = ("planner", "searcher", "reader", "verifier", "summarizer")


def response(intent: str, *roles: str) -> Callable[[Response], Response]:
    def register(fn: Response) -> Response:
        for r in roles:
            RESPONSES[(r, intent)] = fn
        return fn

    return register


def respond(p: Pipeline, role: str, reading: Reading) -> None:
    """Apply ``reading`` to ``role``; an intent the role has no use for is ignored."""
    RESPONSES.get((role, reading.intent), _ignored)(p, role, reading)


def _ignored(p: Pipeline, role: str, reading: Reading) -> None:
    return None


# -- rejection (before its feedback is read) -----------------------------------------------------------------------
@response("rejected", "planner")
def _planner_rejected(p, role, reading):
    p.state.effect("planner", "redraw")


@response("rejected", "reader")
def _reader_rejected(p, role, reading):
    p.state.doubt = True


@response("rejected", "verifier")
def _verifier_rejected(p, role, reading):
    last = p.latest("verifier")
    p.state.effect("verifier", "flip", str(last.fields.get("verdict")) if last else "")


@response("rejected", "summarizer")
def _summarizer_rejected(p, role, reading):
    s = p.state
    if s.ignores_evidence and s.srng.random() < 0.5:
        s.ignores_evidence = False


# -- intents ----------------------------------------------------------------------------------------------------
@response("accept", "verifier")
def _verifier_accept(p, role, reading):
    p.state.effect("verifier", "accept")


@response("accept", "reader")
def _reader_accept(p, role, reading):
    p.state.effect("reader", "keep")


@response("accept", "summarizer")
@response("use_evidence", "summarizer")
def _summarizer_use_evidence(p, role, reading):
    p.state.effect("summarizer", "use_evidence")


@response("accept", "searcher")
def _searcher_accept(p, role, reading):
    p.state.effect("searcher", "skip")


@response("keep_searching", "searcher")
def _searcher_more(p, role, reading):
    s = p.state
    s.effect("searcher", "more")
    if s.over_search and s.srng.random() < 0.5:
        s.effect("searcher", "unstick")


@response("keep_searching", "verifier")
@response("verify", "verifier")
def _verifier_strict(p, role, reading):
    p.state.effect("verifier", "strict_check")


@response("keep_searching", "reader")
@response("use_evidence", "reader")
def _reader_abstain(p, role, reading):
    s = p.state
    if reading.intent == "use_evidence" and s.evidence_in_hand:
        s.effect("reader", "verify")  # re-read the facts it has
    elif s.srng.random() < p.params.literal_reading:
        s.effect("reader", "abstain")


@response("keep_searching", "summarizer")
def _summarizer_defer(p, role, reading):
    if p.state.srng.random() < p.params.literal_reading:
        p.state.effect("summarizer", "defer")


@response("search_for", "searcher", "planner", "verifier")
def _search_for(p, role, reading):
    if not reading.argument:
        if role == "searcher":
            _searcher_more(p, role, reading)
        return
    p.state.effect(role, "search_for", reading.argument)


@response("verify", "reader")
@response("backtrack", "reader")
def _reader_verify(p, role, reading):
    p.state.effect("reader", reading.intent)


@response("verify", "searcher")
def _searcher_recheck(p, role, reading):
    p.state.effect("searcher", "recheck")


@response("verify", "summarizer")
def _summarizer_verify(p, role, reading):
    if p.state.srng.random() < p.params.verify_skill:
        p.state.effect("summarizer", "use_evidence")


@response("concise", "summarizer")
def _summarizer_concise(p, role, reading):
    p.state.effect("summarizer", "concise")


@response("refocus", "searcher")
def _searcher_refocus(p, role, reading):
    if p.state.over_search and p.state.srng.random() < 0.5:
        p.state.effect("searcher", "unstick")


@response("decompose", "planner", "searcher")
def _decompose(p, role, reading):
    p.state.effect(role, "decompose")


@response("stop_repeating", "searcher")
def _stop_repeating(p, role, reading):
    s = p.state
    if s.over_search:
        s.effect("searcher", "unstick")
    elif s.srng.random() < p.params.literal_reading:
        s.effect("searcher", "skip")  # not repeating: taken as "stop searching"


@response("backtrack", "searcher")
def _backtrack(p, role, reading):
    s = p.state
    if s.wrong_from is not None:
        p.undo_from(s.wrong_from)
    elif s.findings:
        p.undo_from(len(s.findings) - 1)  # misguided: a correct finding is lost


@response("none", *ALL)
def _confused(p, role, reading):
    if p.state.srng.random() < p.params.confusion:
        p.state.effect(role, "confused")


# -- over-supervision ---------------------------------------------------------------------------------------------
def derail(p: Pipeline, role: str) -> None:
    """One intervention too many: the role loses its thread (its drift, switched on)."""
    s = p.state
    s.derails.append(role)
    if role == "planner":
        s.effect("planner", "confused")
    elif role == "searcher":
        if s.findings:
            p.undo_from(len(s.findings) - 1)
        else:
            s.over_search = True
    elif role == "reader":
        s.effect("reader", "derailed")
    elif role == "verifier":
        s.strict = True
    elif role == "summarizer":
        s.ignores_evidence = True
