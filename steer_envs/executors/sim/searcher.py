"""The simulated searcher: real questions, real corpus, real BM25 results, simulated reasoning.

What is simulated is the *agent*: which query it writes (the current sub-question plus the bridge entities it has
found, with word-level noise), whether it recognises a retrieved supporting passage (which resolves a hop),
whether it extracts the answer correctly, and how it drifts. Drift has a hazard that grows with the turn count and
a per-episode propensity; its modes are the ones seen in real search agents: redundant re-searching after the
answer is in hand, fixation on a distractor passage (a wrong bridge entity), a side goal, never producing an
answer, and premature answers. Everything the simulator writes is in the Search-R1 text protocol.

What it *says* reveals nothing hidden: its ``<think>`` text is drawn from sentences of real recorded agents, chosen
by the observable situation of the turn only (:mod:`.thoughts`, :mod:`.situation`), so a steerer must read drift
from behaviour (queries, results, answers), as it would with a real agent. Notes are read by meaning
(:mod:`steer_envs.notes`) and their effects depend on the hidden state (:mod:`.responses`).

Randomness: one ``numpy.random.Generator`` per episode, seeded from the reset seed; it is part of the state, so
forks continue identically (or independently after :meth:`SimSearcher.reseed`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...data.records import Task
from ...data.scoring import f1 as f1_score
from ...notes import Reading, shared_reader
from ...retrieval.cache import cached_search, search_key
from ...text import STOP_WORDS, entities
from ..base import Executor, ExecutorContext, Intervention, TurnResult
from ..protocol import (
    INVALID_ACTION_REPLY,
    render_answer,
    render_guidance,
    render_information,
    render_rejection,
    render_search,
)
from .hops import Hop, build_hops, fill_query, is_choice
from .profile import DRIFT_KINDS, SimProfile
from .resources import SimResources
from .responses import RESPONSES, derail
from .situation import normalize_query as _normalize
from .situation import situation_of
from .thoughts import fill

_YES_NO = ("yes", "no")
_SIDE_ASPECTS = ("history", "early life", "career", "family", "location", "awards")


@dataclass
class SimState:
    """Everything that changes during an episode (deep-copied by forks)."""

    rng: np.random.Generator
    hops: list[Hop]
    knows: bool  # parametric knowledge: an answer without evidence would be right
    propensity: float
    hop: int = 0  # index of the first unresolved hop; == len(hops) once the evidence is in hand
    findings: list[str] = field(default_factory=list)  # what the agent believes each resolved hop revealed
    wrong_from: int | None = None  # index of the first hop resolved from a distractor (fixation)
    extract_ok: bool = False  # the answer will be extracted correctly from the evidence in hand
    evidence_id: str | None = None
    drift: str | None = None
    premature: bool = False  # will answer next turn without the evidence
    pending: str | None = None  # what a note set in motion for the next turn (see responses.py)
    pending_arg: str = ""
    queries: list[str] = field(default_factory=list)
    seen_ids: list[str] = field(default_factory=list)
    last_hit_ids: list[str] = field(default_factory=list)
    last_titles: list[str] = field(default_factory=list)
    side_topic: str = ""
    attempts: int = 0  # searches made for the current hop so far (retries rephrase)
    hazard_factor: float = 1.0
    proposed: bool = False  # an answer was proposed and rejected (observable)
    labels: list[str | None] = field(default_factory=list)  # drift label of each turn (privileged)
    understood: list[str] = field(default_factory=list)  # intents read from interventions (privileged)


class SimSearcher(SimResources, Executor):
    """Executor spec ``sim:<profile>``; see the module docstring."""

    deterministic = True
    interactive = True

    def __init__(self, spec: str, profile: SimProfile, context: ExecutorContext) -> None:
        super().__init__(spec, max_turns=context.max_turns)
        self.profile = profile
        self.context = context
        self.topk = context.topk
        self._init_resources()
        self.params = profile
        self._s: SimState | None = None

    @property
    def state(self) -> SimState:
        assert self._s is not None, "call reset(task) first"
        return self._s

    def __getstate__(self) -> dict:
        return self._without_resources(dict(self.__dict__))

    def _title(self, pid: str) -> str:
        return self.corpus[pid].title if pid in self.corpus else ""

    # -- Executor hooks ---------------------------------------------------------------------------------------
    def _reset(self, task: Task, seed: int | None) -> None:
        p = self.params = self.profile.for_benchmark(task.benchmark)
        self.max_turns = self.context.max_turns  # interventions shrink the budget of one episode only
        rng = np.random.default_rng(seed)
        titles = {pid: self._title(pid) for pid in task.supporting_ids}
        hops = [
            Hop(
                h.query, tuple(dict.fromkeys(x for pid in h.target_ids for x in self.corpus.same_title(pid))), h.finding
            )
            for h in build_hops(task, titles)
        ]  # any passage of the same article serves as the hop's evidence
        propensity = 2.0 * float(rng.beta(p.propensity_alpha, p.propensity_beta))
        recall = max(p.parametric_recall, 0.5) if is_choice(task, hops) else p.parametric_recall  # a coin flip
        knows = bool(rng.random() < recall)
        self._s = SimState(rng=rng, hops=hops, knows=knows, propensity=propensity)
        if rng.random() < p.never_answer_rate:
            self._s.drift = "never_answer"
        self.prompt = task.question

    def reseed(self, seed: int) -> None:
        """Replace the episode's generator (forks that must continue independently)."""
        if self._s is not None:
            self._s.rng = np.random.default_rng(seed)

    def _blank_copy(self) -> SimSearcher:
        clone = type(self)(self.spec, self.profile, self.context)
        self._share_resources(clone)
        return clone

    def _get_impl_state(self) -> Any:
        return {"sim": copy.deepcopy(self._s), "profile": self.params}

    def _set_impl_state(self, state: Any) -> None:
        self._s = copy.deepcopy(state["sim"])
        self.params = state["profile"]

    # -- hidden-state predicates (also read by responses.py) ---------------------------------------------------
    @property
    def evidence_in_hand(self) -> bool:
        return self.state.hop >= len(self.state.hops)

    def answer_would_be_right(self) -> bool:
        s = self.state
        if s.wrong_from is not None:
            return False
        return s.extract_ok if self.evidence_in_hand else s.knows

    def hidden_situation(self) -> str:
        """A name for the hidden state at a decision point (privileged; what an oracle would act on)."""
        s = self.state
        if s.drift in ("never_answer", "redundant", "side_goal"):
            return s.drift
        if s.wrong_from is not None:
            return "fixated"
        if self.evidence_in_hand:
            return "in_hand_right" if s.extract_ok else "in_hand_wrong"
        if s.premature:
            if s.knows:
                return "premature_knows"
            seen = any(pid in s.hops[s.hop].target_ids for pid in s.seen_ids)
            return "premature_unrecognised" if seen else "premature_unseen"
        return "searching"

    def privileged(self) -> dict[str, Any]:
        s = self._s
        if s is None:
            return {}
        in_hand = self.evidence_in_hand
        return {
            "situation": self.hidden_situation(),
            "drift": s.drift,
            "premature": s.premature,
            "hop": s.hop,
            "hops": len(s.hops),
            "evidence_in_hand": in_hand and s.wrong_from is None,
            "fixated": s.wrong_from is not None,
            "evidence_unrecognised": not in_hand and any(pid in s.hops[s.hop].target_ids for pid in s.seen_ids),
            "answer_would_be_correct": self.answer_would_be_right(),
            "next_targets": [] if in_hand else list(s.hops[s.hop].target_ids),
            "next_target_titles": [] if in_hand else sorted({self._title(pid) for pid in s.hops[s.hop].target_ids}),
            "propensity": s.propensity,
            "drift_labels": list(s.labels),
            "understood_intents": list(s.understood),
        }

    # -- one turn -----------------------------------------------------------------------------------------------
    def _turn(self) -> TurnResult:
        s = self.state
        label = s.drift if s.drift else ("premature" if s.premature else None)
        s.labels.append(label)
        if s.pending is not None:
            result = self._directed_turn()
        elif s.drift == "never_answer":
            result = self._ramble()
        elif s.drift == "redundant":
            result = self._redundant_search()
        elif s.drift == "side_goal":
            result = self._search(self._side_query())
        elif s.premature or self.evidence_in_hand:
            result = self._answer()
        else:
            query = self._hop_query() if s.attempts == 0 else self._reformulated_query()
            asked = {_normalize(q) for q in s.queries}
            for _ in range(3):  # an agent on track rephrases rather than repeat itself
                if _normalize(query) not in asked:
                    break
                query = self._reformulated_query(lead=True)
            result = self._search(query)
        if result.kind != "answer":
            self._after_turn()
        return result

    def _directed_turn(self) -> TurnResult:
        """The turn a note set in motion (responses.py chose ``pending``)."""
        s, p = self.state, self.params
        kind, arg = s.pending, s.pending_arg
        s.pending, s.pending_arg = None, ""
        if kind == "answer_now":
            return self._answer()
        if kind == "confused":
            return self._ramble()
        right_before = self.evidence_in_hand and self.answer_would_be_right()
        if kind == "search_for":
            result = self._search(arg or self._hop_query())
        else:  # keep_searching / verify: search again for what is still missing (or re-confirm the last hop)
            result = self._search(self._reformulated_query())
        if right_before and s.rng.random() < p.second_guess_search:
            s.extract_ok = False  # told its evidence falls short, it doubts an answer that was right
        return result

    def _after_turn(self) -> None:
        """Drift onset and recovery, decided after each non-answer turn (takes effect from the next)."""
        s, p, rng = self.state, self.params, self.state.rng
        if s.drift is not None and s.drift != "fixation":
            # never answering does not end unaided (real agents ramble until the budget runs out)
            if s.drift != "never_answer" and rng.random() < p.drift_recover:
                s.drift = None
            return
        if s.drift is None and s.pending is None:
            hazard = s.propensity * (p.hazard_base + p.hazard_growth * self.stats.turns) * s.hazard_factor
            if rng.random() < hazard:
                self._start_drift()

    def _start_drift(self) -> None:
        s, p, rng = self.state, self.params, self.state.rng
        in_hand = self.evidence_in_hand
        distractors = [pid for pid in s.last_hit_ids if not in_hand and pid not in s.hops[s.hop].target_ids]
        applicable = self._drift_applicable(in_hand, distractors)
        modes = [m for m in DRIFT_KINDS if applicable.get(m, False) and p.drift_weights.get(m, 0.0) > 0]
        if not modes:
            return
        weights = np.array([p.drift_weights[m] for m in modes], dtype=float)
        mode = modes[int(rng.choice(len(modes), p=weights / weights.sum()))]
        if mode == "fixation":
            pid = distractors[int(rng.integers(len(distractors)))]
            s.wrong_from = s.hop
            s.findings.append(self._title(pid))
            s.hop += 1
            if self.evidence_in_hand:
                s.evidence_id = pid
            s.premature = False
        elif mode == "side_goal":
            self.start_side_goal()
            return
        s.drift = mode

    def _drift_applicable(self, in_hand: bool, distractors: list[str]) -> dict[str, bool]:
        """Which drift kinds can start now (a kind left out cannot)."""
        s = self.state
        return {
            "redundant": in_hand and bool(s.queries),
            "fixation": bool(distractors) and s.wrong_from is None,
            "side_goal": bool(s.last_hit_ids),
            "never_answer": True,
        }

    def start_side_goal(self) -> None:
        s = self.state
        pid = s.last_hit_ids[int(s.rng.integers(len(s.last_hit_ids)))]
        s.side_topic = f"{self._title(pid)} {_SIDE_ASPECTS[int(s.rng.integers(len(_SIDE_ASPECTS)))]}"
        s.drift = "side_goal"

    # -- actions ---------------------------------------------------------------------------------------------
    def _think(self, act: str, query: str | None = None, answer: str | None = None) -> str:
        """Words of a real agent in the same observable situation (empty when no recordings are available)."""
        s = self.state
        bank = self.thoughts
        if bank is None:
            return ""
        question = self.current_task.question
        situation = situation_of(question, act, self.stats.turns, query, s.queries, s.last_titles, s.proposed)
        return fill(bank.choose(situation, s.rng), question, query=query, answer=answer, titles=s.last_titles)

    def _search(self, query: str) -> TurnResult:
        s = self.state
        query = query.strip() or self.current_task.question
        think = self._think("search", query=query)
        hits = cached_search(
            self.retriever, search_key(self.context.retriever, self.context.data_dir), query, self.topk
        )
        s.queries.append(query)
        s.last_hit_ids = [h.id for h in hits]
        s.last_titles = [h.title for h in hits]
        for h in hits:
            if h.id not in s.seen_ids:
                s.seen_ids.append(h.id)
        hop_before = s.hop
        self._read_results(hits)
        s.attempts = 0 if s.hop != hop_before else s.attempts + 1
        segment = render_search(query, think)
        observation = render_information(hits)
        return TurnResult("search", segment, observation, query=query, tokens=_tokens(segment) + _tokens(observation))

    def _read_results(self, hits) -> None:
        """Recognise supporting passages (resolving hops); decide on a premature answer if still unresolved."""
        s, p, rng = self.state, self.params, self.state.rng
        ids = [h.id for h in hits]
        while not self.evidence_in_hand:
            hop = s.hops[s.hop]
            implicit = not hop.target_ids  # a reasoning step with no recorded passage: any result will do
            found = ids[:1] if implicit else [pid for pid in ids if pid in hop.target_ids]
            if not found or rng.random() >= p.recognize_skill:
                break
            self.resolve(found[0], finding=self._title(found[0]) if implicit else None)
            if implicit:
                break
        if not self.evidence_in_hand and s.drift is None:
            s.premature = bool(rng.random() < p.premature_rate)

    def resolve(self, pid: str, finding: str | None = None) -> None:
        s, p = self.state, self.params
        hop = s.hops[s.hop]
        s.findings.append(hop.finding if finding is None else finding)
        s.hop += 1
        s.premature = False
        if self.evidence_in_hand:
            s.evidence_id = pid
            s.extract_ok = bool(s.rng.random() < p.extract_skill)

    def _redundant_search(self) -> TurnResult:
        s = self.state
        query = s.queries[-1] if s.rng.random() < 0.7 else self._noisy(s.queries[int(s.rng.integers(len(s.queries)))])
        return self._search(query)

    def _ramble(self) -> TurnResult:
        segment = f"<think> {self._think('invalid') or '...'} </think>"
        return TurnResult("invalid", segment, INVALID_ACTION_REPLY, tokens=_tokens(segment))

    def _answer(self) -> TurnResult:
        s = self.state
        answer = self.current_task.golden_answers[0] if self.answer_would_be_right() else self._wrong_span()
        think = self._think("answer", answer=answer)
        s.premature = False
        segment = render_answer(answer, think)
        return TurnResult("answer", segment, "", answer=answer, tokens=_tokens(segment))

    def _wrong_span(self) -> str:
        """A plausible wrong answer: the title of a passage the agent read (the distractor it fixated on first)."""
        s = self.state
        gold = self.current_task.golden_answers
        if gold[0].strip().lower() in _YES_NO:
            return "no" if gold[0].strip().lower() == "yes" else "yes"
        if is_choice(self.current_task, s.hops):  # the other option the question names
            options = [o.strip(" ?,.") for o in re.split(r",| or ", self.current_task.question.split("?")[0])[-2:]]
            others = [o for o in options if o and f1_score(o, gold) < 0.5]
            if others:
                return others[-1]
        pool = ([s.evidence_id] if s.evidence_id else []) + s.seen_ids[::-1] + list(self.current_task.passage_ids)
        for pid in pool:
            title = self._title(pid)
            if title and f1_score(title, gold) < 0.5 and s.rng.random() < 0.6:
                return title
        for pid in pool:
            title = self._title(pid)
            if title and f1_score(title, gold) < 0.5:
                return title
        return "unknown"

    # -- queries -------------------------------------------------------------------------------------------------
    def _hop_query(self, noisy: bool = True) -> str:
        """The query for the current hop: the sub-question as written (with word noise), or, with probability
        ``entity_queries``, the entity it is about plus a few words of the relation (R1-Searcher's style)."""
        s, p = self.state, self.params
        if noisy and p.entity_queries and s.rng.random() < p.entity_queries:
            return self._focused_query()
        index = min(s.hop, len(s.hops) - 1)
        query = fill_query(s.hops[index].query, s.findings) or self.current_task.question
        return self._noisy(query) if noisy else query

    def _focused_query(self) -> str:
        """The entity the current hop is about (a name in its sub-question, else the latest finding) plus two of its
        other content words."""
        s = self.state
        full = self._hop_query(noisy=False)
        anchors = (
            question_entities(full)
            or ([s.findings[-1]] if s.findings else [])
            or question_entities(self.current_task.question)
        )
        anchors = [a for a in anchors if a] or [full]
        anchor_words = {w.lower() for a in anchors for w in a.split()}
        rest = [w for w in full.rstrip("?").split() if w.lower() not in anchor_words and w.lower() not in STOP_WORDS]
        picked = [rest[i] for i in sorted(s.rng.permutation(len(rest))[:2])] if rest else []
        return " ".join([anchors[int(s.rng.integers(len(anchors)))]] + picked)

    def _reformulated_query(self, lead: bool = False) -> str:
        """A retry (or a search a note asked for): the agent narrows the query to the entity it is about and may
        follow a lead from its latest results (``explore``, or always with ``lead``)."""
        s, p = self.state, self.params
        query = self._focused_query()
        if s.last_titles and (lead or s.rng.random() < p.explore):
            title = s.last_titles[int(s.rng.integers(len(s.last_titles)))]
            query = f"{query} {title}"
        return query

    def _noisy(self, query: str) -> str:
        s, p = self.state, self.params
        words = query.rstrip("?").split()
        kept = [w for w in words if s.rng.random() >= p.query_noise] or words[:1]
        if s.rng.random() < p.query_extra_word:
            kept.append(_SIDE_ASPECTS[int(s.rng.integers(len(_SIDE_ASPECTS)))])
        return " ".join(kept)

    def _side_query(self) -> str:
        return self.state.side_topic or self._hop_query()

    # -- interventions -------------------------------------------------------------------------------------------
    def _receive(self, intervention: Intervention) -> None:
        s, p, rng = self.state, self.params, self.state.rng
        rendered = (
            render_rejection(intervention.text) if intervention.kind == "reject" else render_guidance(intervention.text)
        )
        self.transcript += rendered
        self.stats.tokens += _tokens(rendered)
        if not self.done and p.intervention_turn_cost:
            self.max_turns = max(self.stats.turns + 1, self.max_turns - p.intervention_turn_cost)
        reading = (
            Reading("reject", 1.0)
            if intervention.kind == "reject"
            else shared_reader("searcher").read_in_context(intervention.text, self.current_task.question)
        )
        s.understood.append(reading.intent)
        prior = self.stats.interventions - 1  # the base class has already counted this one
        if p.disruption and prior > 0 and rng.random() < min(1.0, p.disruption * prior):
            derail(self)
            return
        if reading.actionable and rng.random() >= p.compliance:
            return
        self._respond(reading)

    def _respond(self, reading: Reading) -> None:
        """The effect of a note that was read and followed (the response table of :mod:`.responses`)."""
        RESPONSES[reading.intent](self, reading)

    def undo_from(self, index: int | None) -> None:
        s = self.state
        if index is None:
            return
        s.findings = s.findings[:index]
        s.hop = index
        s.wrong_from = None
        s.evidence_id = None
        s.extract_ok = False
        if s.drift == "fixation":
            s.drift = None
        s.premature = False
        s.pending = "keep_searching"


#: capitalised phrases of the question after its first word: the names a searcher anchors its queries on
#: (:func:`steer_envs.text.entities` with its default rules; kept here as the searcher's name for it)
question_entities = entities


def _tokens(text: str) -> int:
    """A cheap token count (words), the same for every simulated turn."""
    return len(text.split())
