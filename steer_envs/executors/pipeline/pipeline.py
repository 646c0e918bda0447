"""The five-role pipeline as a forkable frozen system: planner -> searcher -> reader -> verifier -> summarizer.

One *agent turn* is one role writing one message; the message is a *hand-off* to the next role, and every
hand-off is a point where a supervisor may act: let it through (:meth:`Pipeline.deliver`), attach a note the
receiver reads first (``deliver(note)``), or reject it so that its sender redoes its turn with the feedback
(:meth:`Pipeline.reject`). The verifier's FAIL sends the claim back to the searcher with a search hint (the loop in
which over-rejection costs turns); after ``max_rounds`` search rounds its verdict goes to the summarizer whatever
it is. Only the summarizer answers: the episode ends when its hand-off to the user goes through, or when the
agent-turn budget is spent (the last turn is always the summarizer's, so a run that reaches the end answers).

Each role is simulated (:mod:`.roles`, drift per :mod:`.profile`) or an LLM (:mod:`.llm_roles`), chosen per role
by spec: ``roles={"verifier": "hf:gemma-3-270m"}``. Notes to simulated roles are read by meaning
(:mod:`.intents`) and act through :mod:`.responses`; an LLM role reads them in its prompt.

Randomness: one generator per episode, part of the state; forks continue identically, or independently after
:meth:`Pipeline.reseed`.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np

from ...data.records import Task
from ...data.scoring import f1 as f1_score
from ...errors import ServiceError, SteerEnvsError, unknown_name
from ...failures import CONTEXT_TRUNCATION, failure_source
from ...llm.base import ContextOverflowError
from ...notes import Reading, shared_reader
from ..base import Executor, ExecutorContext, ExecutorStats, Intervention, TurnResult
from ..sim.hops import Hop, build_hops, is_choice
from ..sim.resources import SimResources
from ..sim.situation import situation_of
from ..sim.thoughts import fill
from .intents import HANDOFF_INTENTS
from .messages import ROLES, USER, Handoff, claimed_answer, parse_message, render_message
from .profile import PipelineProfile
from .responses import derail, respond
from .roles import SIM_ROLES, route
from .state import PipelineState

#: an answer counts as right (for the over-rejection measure) at this F1 against the golden answers
RIGHT_F1 = 0.8
SUPERVISION_STREAM = 7919


class Pipeline(SimResources, Executor):
    """Spec ``sim:<pipeline profile>``; see the module docstring. An :class:`~steer_envs.executors.Executor` whose
    turns are agent turns (``steer_envs.testing.check_executor`` runs on it): :meth:`reset` starts an empty episode,
    each :meth:`step` is one agent turn (the planner's first, then the receiver of the pending hand-off) and
    returns its :class:`TurnResult` (kind ``search`` for a searcher's turn that searched, ``answer`` when the final
    answer goes through, ``message`` for any other hand-off, ``failed`` when a service failed). It implements the
    executor surface itself rather than the base class's ``_turn`` hooks: a note is attached to the pending hand-off
    and delivered at once, and the transcript is the hand-off log."""

    interactive = True

    def __init__(
        self, spec: str, profile: PipelineProfile, context: ExecutorContext, roles: dict[str, str] | None = None
    ) -> None:
        roles = dict(roles or {})
        bad = sorted(set(roles) - set(ROLES))
        if bad:
            raise unknown_name(
                "pipeline role",
                bad[0],
                ROLES,
                hint='roles maps a role to a model spec, e.g. {"verifier": "hf:gemma-3-270m"}',
            )
        self.spec = spec
        self.profile = profile
        self.params = profile
        self.context = context
        self.role_specs = {r: str(v) for r, v in roles.items() if v and not str(v).startswith("sim")}
        self.deterministic = not self.role_specs
        #: roles whose turns are supplied from outside (:meth:`submit`): the learning roles of the PettingZoo view
        self.external: set[str] = set()
        self.max_turns = context.max_turns
        self._init_resources()
        self._llm: dict[str, Any] = {}
        self.task: Task | None = None
        self._s: PipelineState | None = None
        self._clear()

    def _clear(self) -> None:
        self.handoffs: list[Handoff] = []
        self.pending: Handoff | None = None
        self.awaiting: tuple[str, Handoff | None, int] | None = None
        self.inboxes: dict[str, Handoff | None] = {}
        self.turns_by_role: dict[str, int] = {r: 0 for r in ROLES}
        self.answer: str | None = None
        self.done = False
        self.failure: str | None = None
        self.failure_source: str | None = None
        #: ``"context"`` when a model role's prompt outgrew its context: the episode ends, scored without an answer
        self.truncation: str | None = None
        self.truncation_detail: str | None = None
        self.stats = ExecutorStats()
        self.last_titles: list[str] = []

    # -- resources ------------------------------------------------------------------------------------------------
    def llm_role(self, role: str):
        if role not in self._llm:
            from .llm_roles import LLMRole

            self._llm[role] = LLMRole(role, self.role_specs[role])
        return self._llm[role]

    def close(self) -> None:
        """Release the model roles' backends (their connections and threads, where a backend has ``close``) and the
        references to the shared read-only resources; idempotent, and the pipeline still runs afterwards (both are
        rebuilt on use). The env's ``close`` calls it."""
        for role in self._llm.values():
            close = getattr(role.backend, "close", None)
            if close is not None:
                close()
        self._init_resources()

    def __getstate__(self) -> dict:
        return {**self._without_resources(dict(self.__dict__)), "_llm": {}}

    @property
    def state(self) -> PipelineState:
        assert self._s is not None, "call reset(task) first"
        return self._s

    # -- the executor surface -----------------------------------------------------------------------------------
    @property
    def transcript(self) -> str:  # type: ignore[override]  # the hand-off log, derived: never assigned here
        return "\n".join(h.line() for h in self.handoffs)

    @property
    def turns_left(self) -> int:
        return max(0, self.max_turns - self.stats.turns)

    def reset(self, task: Task, seed: int | None = None) -> None:
        p = self.params = self.profile.for_benchmark(task.benchmark)
        self.task = task
        self._clear()
        rng = np.random.default_rng(seed)
        titles = {pid: (self.corpus[pid].title if pid in self.corpus else "") for pid in task.supporting_ids}
        hops = [
            Hop(
                h.query, tuple(dict.fromkeys(x for pid in h.target_ids for x in self.corpus.same_title(pid))), h.finding
            )
            for h in build_hops(task, titles)
        ]
        recall = max(p.parametric_recall, 0.5) if is_choice(task, hops) else p.parametric_recall
        seed_base = int(rng.integers(2**31 - 1))
        self._s = PipelineState(
            rng=rng,
            srng=np.random.default_rng([seed_base, SUPERVISION_STREAM]),
            seed_base=seed_base,
            hops=hops,
            knows=bool(rng.random() < recall),
            strict=bool(rng.random() < p.strict_rate),
            over_search=bool(rng.random() < p.over_search_rate),
            ignores_evidence=bool(rng.random() < p.ignore_evidence_rate),
            verbose=bool(rng.random() < p.verbose_rate),
        )

    def supports_task(self, task: Task) -> bool:
        """Every task: the pipeline searches the real corpus for any question."""
        return True

    def reseed(self, seed: int) -> None:
        """Independent continuations: every later turn (and response) draws from streams of ``seed``."""
        if self._s is not None:
            self._s.seed_base = int(seed)
            self._s.srng = np.random.default_rng([int(seed), SUPERVISION_STREAM])
            self._s.rng = np.random.default_rng([int(seed), self.stats.turns])

    def _unstarted(self) -> bool:
        """Reset, and the planner has not taken its first turn yet."""
        return (
            self.task is not None
            and self._s is not None
            and not self.handoffs
            and self.pending is None
            and self.awaiting is None
            and not self.done
        )

    def step(self) -> TurnResult:
        """One agent turn: the planner's first turn after :meth:`reset`, else the pending hand-off goes through
        (its receiver takes its turn; the final answer's hand-off ends the episode)."""
        before = len(self.handoffs)
        if self._unstarted():
            self._take_turn("planner", None)
        else:
            self.deliver(None)
        return self._turn_result(before)

    def _turn_result(self, before: int) -> TurnResult:
        """The turn that added ``self.handoffs[before:]`` (their transcript lines are its segment)."""
        new = self.handoffs[before:]
        segment = "".join(("\n" if before + i else "") + h.line() for i, h in enumerate(new))
        tokens = sum(len(h.text.split()) for h in new)
        if self.done and self.failure is not None:
            return TurnResult("failed", segment, tokens=tokens, error=self.failure, source=self.failure_source)
        if self.done and self.truncation is not None:
            return TurnResult("overflow", segment, tokens=tokens, error=self.truncation_detail)
        if self.done and isinstance(self.answer, str):
            return TurnResult("answer", segment, answer=self.answer, tokens=tokens)
        queries = new[-1].fields.get("queries") if new and new[-1].sender == "searcher" else None
        if queries:
            return TurnResult("search", segment, query=str(queries[0]), tokens=tokens)
        return TurnResult("message", segment, tokens=tokens)

    def intervene(self, intervention: Intervention) -> None:
        """A note is attached to the pending hand-off and delivered; a rejection sends it back to its sender.
        Before the planner's first turn a note is read by the planner; after the final answer went through, a
        rejection reopens the episode (the summarizer redoes its turn) while agent turns are left."""
        if self._unstarted():
            if intervention.kind == "reject":
                raise SteerEnvsError("nothing to reject: the planner has not written its first message; call step()")
            self.stats.interventions += 1
            self._read("planner", intervention.text, rejected=False)
            return
        last = self.handoffs[-1] if self.handoffs else None
        if (
            self.done
            and intervention.kind == "reject"
            and self.failure is None
            and self.answer is not None
            and last is not None
            and last.receiver == USER
            and self.turns_left > 0
        ):
            self.done, self.answer, self.pending = False, None, last
        if self.pending is None or self.done:
            raise SteerEnvsError("the pipeline has no pending hand-off; call reset(task) first")
        self.stats.interventions += 1
        if intervention.kind == "reject":
            self.reject(intervention.text)
        else:
            self.deliver(intervention.text)

    # -- hand-offs ------------------------------------------------------------------------------------------------
    def deliver(self, note: str | None = None) -> None:
        h = self._pending()
        if note is not None and h.receiver == USER:
            self.reject(note)  # a note on the final answer is a request to revise it: the summarizer rereads
            return
        if note is not None:
            h = replace(h, notes=h.notes + (note,))
            self.handoffs[-1] = self.pending = h
            self._read(h.receiver, note, rejected=False)
        if h.receiver == USER:
            self._finish(claimed_answer(h))
            return
        receiver = h.receiver
        if self.turns_left <= 1:
            receiver = "summarizer"  # the last agent turn is the summarizer's
        if self.turns_left == 0:
            self._finish(self._last_summary())
            return
        self._take_turn(receiver, h)

    def reject(self, feedback: str) -> None:
        h = self._pending()
        if self.task is not None and claimed_answer(h) is not None and self.is_right(claimed_answer(h)):
            self.state.steerer_rejections_of_right += 1
        if self.turns_left == 0:
            self._finish(claimed_answer(h) if h.receiver == USER else self._last_summary())
            return
        if self.turns_left == 1 and h.sender != "summarizer":
            self._take_turn("summarizer", h)  # no turn left for a retry and the summary
            return
        self._read(h.sender, feedback, rejected=True)
        self._take_turn(h.sender, self.inboxes.get(h.sender), retry=h.retry + 1)

    def _pending(self) -> Handoff:
        if self.pending is None or self.done:
            raise SteerEnvsError("the pipeline has finished (or was not reset); call reset(task) to start another")
        return self.pending

    def _finish(self, answer: str | None) -> None:
        self.answer = answer
        self.done = True

    def _last_summary(self) -> str | None:
        for h in reversed(self.handoffs):
            if h.sender == "summarizer":
                return claimed_answer(h)
        return None

    def _read(self, role: str, text: str, rejected: bool) -> None:
        """A note or feedback reaches ``role``: LLM roles read it in their prompt; simulated ones by meaning."""
        s = self.state
        if role in self.role_specs:
            s.effect(role, "note", text)
            return
        prior = s.received.get(role, 0)
        s.received[role] = prior + 1
        if rejected and not text.strip():  # a bare rejection: the sender only redoes its turn
            if not (prior and s.srng.random() < min(1.0, self.params.disruption * prior)):
                respond(self, role, Reading("rejected", 1.0))
            else:
                derail(self, role)
            return
        reading = shared_reader(HANDOFF_INTENTS).read_in_context(text, self.current_task.question)
        s.understood.append((role, reading.intent))
        if prior and s.srng.random() < min(1.0, self.params.disruption * prior):
            derail(self, role)
            return
        if rejected:
            respond(self, role, Reading("rejected", 1.0))
        if reading.actionable and s.srng.random() >= self.params.compliance:
            return
        respond(self, role, reading)

    def _take_turn(self, role: str, inbox: Handoff | None, retry: int = 0) -> None:
        self.inboxes[role] = inbox
        self.state.rng = np.random.default_rng([self.state.seed_base, self.stats.turns])
        if role in self.external:
            self.awaiting, self.pending = (role, inbox, retry), None
            return
        try:
            if role in self.role_specs:
                text, fields = self.llm_role(role).turn(self, inbox)
            else:
                fields = SIM_ROLES[role](self, inbox)
                text = render_message(fields)
        except ContextOverflowError as exc:  # a model role talked past its context: an outcome, scored (no answer)
            self.truncation, self.truncation_detail = CONTEXT_TRUNCATION, str(exc)
            self.pending, self.awaiting, self.done = None, None, True
            return
        except ServiceError as exc:  # a model or retrieval server failed after its retries: end this episode only
            self._fail(exc)
            return
        self._record(role, text, fields, retry)

    def _fail(self, exc: ServiceError) -> None:
        """The episode stops here with the reason; the env truncates it (``steer_envs.failures``)."""
        self.failure, self.failure_source = str(exc), failure_source(exc)
        self.pending, self.awaiting, self.done = None, None, True

    def submit(self, text: str | None = None, fields: dict[str, Any] | None = None) -> Handoff:
        """Complete the turn of the external role the pipeline is waiting for, with its message (text, parsed as
        an LLM's output would be, or ready fields)."""
        if self.awaiting is None:
            raise SteerEnvsError(
                "no role is waiting to take its turn (the pipeline runs every role but the external ones)"
            )
        role, inbox, retry = self.awaiting
        self.awaiting = None
        if fields is None:
            try:
                text, fields = self.fields_from_text(role, text or "")
            except ServiceError as exc:  # the retriever behind a learning searcher failed after its retries
                self._fail(exc)
                return Handoff(len(self.handoffs), role, USER, text or "")  # not recorded: the episode ended
        self._record(role, text if text is not None else render_message(fields), fields, retry)
        return self.handoffs[-1]

    def fields_from_text(self, role: str, text: str) -> tuple[str, dict[str, Any]]:
        """What a role's free text (an LLM's output, a learning agent's action) says; a searcher's text is its query,
        run on the real retriever, and its message is the facts it found."""
        from .roles import facts_message, run_search

        fields = parse_message(role, text)
        if role != "searcher":
            return text, fields
        queries = [str(q) for q in fields.get("queries", []) if str(q).strip()] or [
            text.strip() or self.current_task.question
        ]
        searches = [(q, run_search(self, q, recognise=False)) for q in queries[: self.params.searches_per_round]]
        self.last_titles = [h.title for _, hits in searches for h in hits]
        self.state.round_queries.append([q for q, _ in searches])
        self.state.rounds += 1
        fields = facts_message(self, searches)
        return render_message(fields), fields

    def _record(self, role: str, text: str, fields: dict[str, Any], retry: int) -> None:
        if role == "reader":
            self.state.answer = claimed_answer(Handoff(0, "reader", "", text, fields))
        receiver = route(self, role, fields)
        handoff = Handoff(len(self.handoffs), role, receiver, text, fields, retry=retry)
        self.handoffs.append(handoff)
        self.pending = handoff
        self.turns_by_role[role] += 1
        self.stats.turns += 1
        self.stats.tokens += len(text.split())

    # -- what roles consult -----------------------------------------------------------------------------------------
    def latest(self, role: str) -> Handoff | None:
        for h in reversed(self.handoffs):
            if h.sender == role:
                return h
        return None

    def thought(self, act: str, query: str | None = None, answer: str | None = None) -> str:
        """Words of a real recorded agent in the same observable situation ('' without recordings)."""
        bank = self.thoughts
        if bank is None:
            return ""
        s = self.state
        question = self.current_task.question
        situation = situation_of(
            question, act, s.rounds, query, s.queries, self.last_titles, s.over_rejections > 0 or s.doubt
        )
        return fill(bank.choose(situation, s.rng), question, query=query, answer=answer, titles=self.last_titles)

    def is_right(self, answer: str | None) -> bool:
        return answer is not None and f1_score(answer, self.current_task.golden_answers) >= RIGHT_F1

    def resolve(self, finding: str, fact: tuple[str, str]) -> None:
        s = self.state
        s.findings.append(finding)
        s.evidence_facts.append(fact)
        s.hop += 1

    def undo_from(self, index: int) -> None:
        s = self.state
        s.findings = s.findings[:index]
        s.evidence_facts = s.evidence_facts[:index]
        s.hop = index
        s.wrong_from = None

    def recheck_seen(self) -> None:
        """A second look at every passage seen: unrecognised evidence may be recognised, a fixation noticed."""
        s, p = self.state, self.params
        if s.wrong_from is not None:
            if s.rng.random() < p.verify_skill:
                self.undo_from(s.wrong_from)
            return
        while not s.evidence_in_hand:
            found = [pid for pid in s.seen_ids if pid in s.hops[s.hop].target_ids]
            if not found or s.rng.random() >= p.verify_skill:
                break
            passage = self.corpus[found[0]]
            from .roles import best_sentence

            self.resolve(
                s.hops[s.hop].finding,
                (best_sentence(passage.text, s.hops[s.hop].query, s.hops[s.hop].finding), passage.title),
            )

    # -- privileged / forking -------------------------------------------------------------------------------------
    def privileged(self) -> dict[str, Any]:
        s = self._s
        if s is None:
            return {}
        return {
            "verifier_strict": s.strict,
            "searcher_over_search": s.over_search,
            "summarizer_ignores_evidence": s.ignores_evidence,
            "summarizer_verbose": s.verbose,
            "plan_ok": s.plan_ok,
            "hop": s.hop,
            "hops": len(s.hops),
            "evidence_in_hand": s.evidence_in_hand and s.wrong_from is None,
            "fixated": s.wrong_from is not None,
            "claim_right": self.is_right(s.answer),
            "over_rejections": s.over_rejections,
            "right_answer_rejected": s.over_rejections > 0,
            "steerer_rejections_of_right": s.steerer_rejections_of_right,
            "derails": list(s.derails),
            "understood": [f"{r}:{i}" for r, i in s.understood],
            "rounds": s.rounds,
        }

    def get_state(self) -> dict[str, Any]:
        return copy.deepcopy(
            {
                "task": self.task,
                "params": self.params,
                "state": self._s,
                "handoffs": self.handoffs,
                "pending": self.pending,
                "inboxes": self.inboxes,
                "awaiting": self.awaiting,
                "turns_by_role": self.turns_by_role,
                "answer": self.answer,
                "done": self.done,
                "failure": self.failure,
                "stats": self.stats,
                "last_titles": self.last_titles,
                "max_turns": self.max_turns,
                "failure_source": self.failure_source,
                "truncation": self.truncation,
                "truncation_detail": self.truncation_detail,
            }
        )

    def set_state(self, state: dict[str, Any]) -> None:
        state = copy.deepcopy(state)
        self.task, self.params, self._s = state["task"], state["params"], state["state"]
        self.handoffs, self.pending, self.inboxes = state["handoffs"], state["pending"], state["inboxes"]
        self.awaiting = state["awaiting"]
        self.turns_by_role, self.answer, self.done = state["turns_by_role"], state["answer"], state["done"]
        self.failure, self.stats, self.last_titles = state["failure"], state["stats"], state["last_titles"]
        self.failure_source = state.get("failure_source")
        self.truncation, self.truncation_detail = state.get("truncation"), state.get("truncation_detail")
        self.max_turns = state["max_turns"]

    # -- the base class's hooks: unused, the pipeline implements reset/step/intervene/get_state/set_state itself ----
    def _reset(self, task: Task, seed: int | None) -> None:
        raise NotImplementedError("Pipeline implements reset() itself")

    def _turn(self) -> TurnResult:
        raise NotImplementedError("Pipeline implements step() itself")

    def _receive(self, intervention: Intervention) -> None:
        raise NotImplementedError("Pipeline implements intervene() itself")

    def _blank_copy(self) -> Pipeline:
        raise NotImplementedError("Pipeline implements fork() itself")

    def _get_impl_state(self) -> Any:
        raise NotImplementedError("Pipeline implements get_state() itself")

    def _set_impl_state(self, state: Any) -> None:
        raise NotImplementedError("Pipeline implements set_state() itself")

    def fork(self) -> Pipeline:
        clone = Pipeline(self.spec, self.profile, self.context, self.role_specs)
        self._share_resources(clone)
        clone._llm = self._llm
        clone.external = set(self.external)
        clone.set_state(self.get_state())
        return clone
