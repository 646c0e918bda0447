"""The simulated searcher: real questions, real corpus, real BM25 results, simulated reasoning.

What is simulated is the *agent*: which query it writes (the current sub-question plus the bridge entities it has
found, with word-level noise), whether it recognises a retrieved supporting passage (which resolves a hop),
whether it extracts the answer correctly, and how it drifts. Drift has a hazard that grows with the turn count and
a per-episode propensity; its modes are the ones seen in real search agents: redundant re-searching after the
answer is in hand, fixation on a distractor passage (a wrong bridge entity), a side goal, never producing an
answer, and premature answers. Everything the simulator writes is in the Search-R1 text protocol, and its
``<think>`` text says only what a real agent would (no drift label, no hop index, no hidden answer), so a steerer
must read drift from behaviour.

Randomness: one ``numpy.random.Generator`` per episode, seeded from the reset seed; it is part of the state, so
forks continue identically (or independently after :meth:`SimSearcher.reseed`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...data.corpus import Corpus, load_corpus
from ...data.records import Task
from ...data.scoring import f1 as f1_score
from ...retrieval.registry import make_retriever
from ..base import Executor, ExecutorContext, Intervention, TurnResult
from ..protocol import INVALID_ACTION_REPLY, render_answer, render_guidance, render_information, render_rejection, render_search
from .hops import Hop, build_hops, fill_query
from .intents import Intent, parse_intent
from .profile import DRIFT_MODES, SimProfile
from .retrieval_cache import cached_search

_SIDE_ASPECTS = ("history", "early life", "career", "family", "location", "awards")
_STOPWORDS = frozenset("the a an of in on at to for and or is was were who what which when where how did does do by with from".split())


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
    pending: str | None = None  # a directive the agent accepted: search_for / keep_searching / answer_now / verify
    pending_arg: str = ""
    queries: list[str] = field(default_factory=list)
    seen_ids: list[str] = field(default_factory=list)
    last_hit_ids: list[str] = field(default_factory=list)
    side_topic: str = ""
    hazard_factor: float = 1.0
    labels: list[str | None] = field(default_factory=list)  # drift label of each turn (privileged)
    understood: list[str] = field(default_factory=list)  # intents parsed from interventions (privileged)


class SimSearcher(Executor):
    """Executor spec ``sim:<profile>``; see the module docstring."""

    deterministic = True
    interactive = True

    def __init__(self, spec: str, profile: SimProfile, context: ExecutorContext) -> None:
        super().__init__(spec, max_turns=context.max_turns)
        self.profile = profile
        self.context = context
        self.topk = context.topk
        self._retriever = None
        self._corpus: Corpus | None = None
        self._p = profile
        self._s: SimState | None = None

    # -- shared read-only resources (dropped when pickled) --------------------------------------------------
    @property
    def retriever(self):
        if self._retriever is None:
            self._retriever = make_retriever(self.context.retriever, data_dir=self.context.data_dir)
        return self._retriever

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            self._corpus = load_corpus(data_dir=self.context.data_dir)
        return self._corpus

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_retriever"] = None
        state["_corpus"] = None
        return state

    def _title(self, pid: str) -> str:
        return self.corpus[pid].title if pid in self.corpus else ""

    # -- Executor hooks ---------------------------------------------------------------------------------------
    def _reset(self, task: Task, seed: int | None) -> None:
        p = self._p = self.profile.for_benchmark(task.benchmark)
        self.max_turns = self.context.max_turns  # interventions shrink the budget of one episode only
        rng = np.random.default_rng(seed)
        titles = {pid: self._title(pid) for pid in task.supporting_ids}
        hops = build_hops(task, titles)
        propensity = 2.0 * float(rng.beta(p.propensity_alpha, p.propensity_beta))
        knows = bool(rng.random() < p.parametric_recall)
        self._s = SimState(rng=rng, hops=hops, knows=knows, propensity=propensity)
        if rng.random() < p.never_answer_rate:
            self._s.drift = "never_answer"
        self.prompt = task.question

    def reseed(self, seed: int) -> None:
        """Replace the episode's generator (forks that must continue independently)."""
        if self._s is not None:
            self._s.rng = np.random.default_rng(seed)

    def _blank_copy(self) -> "SimSearcher":
        clone = SimSearcher(self.spec, self.profile, self.context)
        clone._retriever = self._retriever
        clone._corpus = self._corpus
        return clone

    def _get_impl_state(self) -> Any:
        return {"sim": copy.deepcopy(self._s), "profile": self._p}

    def _set_impl_state(self, state: Any) -> None:
        self._s = copy.deepcopy(state["sim"])
        self._p = state["profile"]

    def privileged(self) -> dict[str, Any]:
        s = self._s
        if s is None:
            return {}
        evidence_in_hand = s.hop >= len(s.hops)
        unrecognised = (
            not evidence_in_hand
            and any(pid in s.hops[s.hop].target_ids for pid in s.seen_ids)
        )
        if evidence_in_hand and s.wrong_from is None:
            would_be_right = s.extract_ok
        elif s.wrong_from is not None:
            would_be_right = False
        else:
            would_be_right = s.knows
        return {
            "drift": s.drift,
            "premature": s.premature,
            "hop": s.hop,
            "hops": len(s.hops),
            "evidence_in_hand": evidence_in_hand and s.wrong_from is None,
            "fixated": s.wrong_from is not None,
            "evidence_unrecognised": unrecognised,
            "answer_would_be_correct": would_be_right,
            "propensity": s.propensity,
            "drift_labels": list(s.labels),
            "understood_intents": list(s.understood),
        }

    # -- one turn -----------------------------------------------------------------------------------------------
    def _turn(self) -> TurnResult:
        s = self._s
        assert s is not None and self.task is not None
        label = s.drift if s.drift else ("premature" if s.premature else None)
        s.labels.append(label)
        if s.pending is not None:
            result = self._directed_turn()
        elif s.drift == "never_answer":
            result = self._ramble()
        elif s.drift == "redundant":
            result = self._redundant_search()
        elif s.drift == "side_goal":
            result = self._search(self._side_query(), self._think_side())
        elif s.premature or s.hop >= len(s.hops):
            result = self._answer()
        else:
            result = self._search(self._hop_query(), self._think_next())
        if result.kind != "answer":
            self._after_turn()
        return result

    def _directed_turn(self) -> TurnResult:
        s = self._s
        kind, arg = s.pending, s.pending_arg
        s.pending, s.pending_arg = None, ""
        if kind == "answer_now":
            return self._answer()
        if kind == "search_for":
            query = arg or self._hop_query()
            return self._search(query, f"As suggested, I will search for {query}.")
        # keep_searching / verify: search for what is still missing (or re-confirm the last hop)
        return self._search(self._hop_query(noisy=True), self._think_next())

    def _after_turn(self) -> None:
        """Drift onset and recovery, decided after each non-answer turn (takes effect from the next)."""
        s, p, rng = self._s, self._p, self._s.rng
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
        s, p, rng = self._s, self._p, self._s.rng
        evidence_in_hand = s.hop >= len(s.hops)
        distractors = [pid for pid in s.last_hit_ids if not evidence_in_hand and pid not in s.hops[s.hop].target_ids]
        applicable = {
            "redundant": evidence_in_hand and bool(s.queries),
            "fixation": bool(distractors) and s.wrong_from is None,
            "side_goal": bool(s.last_hit_ids),
            "never_answer": True,
        }
        modes = [m for m in DRIFT_MODES if applicable[m] and p.drift_weights.get(m, 0.0) > 0]
        if not modes:
            return
        weights = np.array([p.drift_weights[m] for m in modes], dtype=float)
        mode = modes[int(rng.choice(len(modes), p=weights / weights.sum()))]
        if mode == "fixation":
            pid = distractors[int(rng.integers(len(distractors)))]
            s.wrong_from = s.hop
            s.findings.append(self._title(pid))
            s.hop += 1
            if s.hop >= len(s.hops):
                s.evidence_id = pid
            s.premature = False
        elif mode == "side_goal":
            pid = s.last_hit_ids[int(rng.integers(len(s.last_hit_ids)))]
            s.side_topic = f"{self._title(pid)} {_SIDE_ASPECTS[int(rng.integers(len(_SIDE_ASPECTS)))]}"
        s.drift = mode

    # -- actions ---------------------------------------------------------------------------------------------
    def _search(self, query: str, think: str) -> TurnResult:
        s = self._s
        query = query.strip() or self.task.question
        hits = cached_search(self.retriever, self.context.retriever, query, self.topk)
        s.queries.append(query)
        s.last_hit_ids = [h.id for h in hits]
        for h in hits:
            if h.id not in s.seen_ids:
                s.seen_ids.append(h.id)
        self._read_results(hits)
        segment = render_search(query, think)
        observation = render_information(hits)
        return TurnResult("search", segment, observation, query=query, tokens=_tokens(segment) + _tokens(observation))

    def _read_results(self, hits) -> None:
        """Recognise supporting passages (resolving hops); decide on a premature answer if still unresolved."""
        s, p, rng = self._s, self._p, self._s.rng
        ids = [h.id for h in hits]
        while s.hop < len(s.hops):
            hop = s.hops[s.hop]
            implicit = not hop.target_ids  # a reasoning step with no recorded passage: any result will do
            found = ids[:1] if implicit else [pid for pid in ids if pid in hop.target_ids]
            if not found or rng.random() >= p.recognize_skill:
                break
            self._resolve(found[0], finding=self._title(found[0]) if implicit else None)
            if implicit:
                break
        if s.hop < len(s.hops) and s.drift is None:
            s.premature = bool(rng.random() < p.premature_rate)

    def _resolve(self, pid: str, finding: str | None = None) -> None:
        s, p = self._s, self._p
        hop = s.hops[s.hop]
        s.findings.append(hop.finding if finding is None else finding)
        s.hop += 1
        s.premature = False
        if s.hop >= len(s.hops):
            s.evidence_id = pid
            s.extract_ok = bool(s.rng.random() < p.extract_skill)

    def _redundant_search(self) -> TurnResult:
        s = self._s
        query = s.queries[-1] if s.rng.random() < 0.7 else self._noisy(s.queries[int(s.rng.integers(len(s.queries)))])
        think = ("Let me search again to make sure." if s.rng.random() < 0.5
                 else f"To be certain, I will look up {query} once more.")
        return self._search(query, think)

    def _ramble(self) -> TurnResult:
        s = self._s
        words = [w for w in self.task.question.rstrip("?").split() if w.lower() not in _STOPWORDS]
        focus = " ".join(words[: 2 + int(s.rng.integers(3))])
        openers = (
            f"Let me think about {focus} step by step.",
            f"I recall something about {focus}, but let me reason it through first.",
            f"The question asks about {focus}. There are several possibilities to consider.",
        )
        segment = f"<think> {openers[int(s.rng.integers(len(openers)))]} </think>"
        return TurnResult("invalid", segment, INVALID_ACTION_REPLY, tokens=_tokens(segment))

    def _answer(self) -> TurnResult:
        s = self._s
        evidence_in_hand = s.hop >= len(s.hops)
        if s.wrong_from is not None:
            right = False
        elif evidence_in_hand:
            right = s.extract_ok
        else:
            right = s.knows
        answer = self.task.golden_answers[0] if right else self._wrong_span()
        if evidence_in_hand:
            think = f"Based on the search results, the answer is {answer}."
        else:
            think = (f"Based on what I know, the answer is {answer}.", f"The answer should be {answer}.",
                     f"I'm not completely sure, but I think the answer is {answer}.")[int(s.rng.integers(3))]
        s.premature = False
        segment = render_answer(answer, think)
        return TurnResult("answer", segment, "", answer=answer, tokens=_tokens(segment))

    def _wrong_span(self) -> str:
        """A plausible wrong answer: the title of a passage the agent read (the distractor it fixated on first)."""
        s = self._s
        gold = self.task.golden_answers
        pool = ([s.evidence_id] if s.evidence_id else []) + s.seen_ids[::-1] + list(self.task.passage_ids)
        for pid in pool:
            title = self._title(pid)
            if title and f1_score(title, gold) < 0.5 and s.rng.random() < 0.6:
                return title
        for pid in pool:
            title = self._title(pid)
            if title and f1_score(title, gold) < 0.5:
                return title
        return "unknown"

    # -- queries and thoughts ----------------------------------------------------------------------------------
    def _hop_query(self, noisy: bool = True) -> str:
        s = self._s
        index = min(s.hop, len(s.hops) - 1)
        query = fill_query(s.hops[index].query, s.findings) or self.task.question
        return self._noisy(query) if noisy else query

    def _noisy(self, query: str) -> str:
        s, p = self._s, self._p
        words = query.rstrip("?").split()
        kept = [w for w in words if s.rng.random() >= p.query_noise] or words[:1]
        if s.rng.random() < p.query_extra_word:
            kept.append(_SIDE_ASPECTS[int(s.rng.integers(len(_SIDE_ASPECTS)))])
        return " ".join(kept)

    def _side_query(self) -> str:
        return self._s.side_topic or self._hop_query()

    def _think_next(self) -> str:
        s = self._s
        if s.findings and s.findings[-1] and s.hop < len(s.hops):
            return f"I found that {s.findings[-1]} is relevant. Next I need more information about it."
        if s.queries:
            return "The results do not give the answer yet. Let me search again."
        return "I need to find some information to answer this question. Let me search."

    def _think_side(self) -> str:
        return f"It may also help to know more about {self._s.side_topic}."

    # -- interventions -------------------------------------------------------------------------------------------
    def _receive(self, intervention: Intervention) -> None:
        s, p, rng = self._s, self._p, self._s.rng
        rendered = render_rejection(intervention.text) if intervention.kind == "reject" else render_guidance(intervention.text)
        self.transcript += rendered
        self.stats.tokens += _tokens(rendered)
        if not self.done and p.intervention_turn_cost:
            self.max_turns = max(self.stats.turns + 1, self.max_turns - p.intervention_turn_cost)
        intent = Intent("reject") if intervention.kind == "reject" else parse_intent(intervention.text)  # type: ignore[arg-type]
        s.understood.append(intent.kind)
        prior = self.stats.interventions - 1  # the base class has already counted this one
        if p.disruption and prior > 0 and rng.random() < min(1.0, p.disruption * prior):
            self._derail()
            return
        if intent.kind == "none" or rng.random() >= p.compliance:
            return
        getattr(self, f"_on_{intent.kind}")(intent)

    def _derail(self) -> None:
        """Over-supervision: one more note and the agent loses its thread, answers hastily to comply, or wanders
        off to a side topic (the paper's turn inflation and harm from intervening at every step)."""
        s = self._s
        s.understood.append("derailed")
        effect = ("lose_thread", "hasty_answer", "side_goal")[int(s.rng.integers(3))]
        if effect == "lose_thread" and s.findings:
            self._undo_from(len(s.findings) - 1)
        elif effect == "side_goal" and s.last_hit_ids and s.drift is None:
            pid = s.last_hit_ids[int(s.rng.integers(len(s.last_hit_ids)))]
            s.side_topic = f"{self._title(pid)} {_SIDE_ASPECTS[int(s.rng.integers(len(_SIDE_ASPECTS)))]}"
            s.drift = "side_goal"
            s.pending = None
        else:
            s.pending, s.pending_arg = "answer_now", ""

    def _on_answer_now(self, intent: Intent) -> None:
        s = self._s
        s.drift = None if s.drift != "fixation" else s.drift
        s.pending = "answer_now"

    def _on_stop_repeating(self, intent: Intent) -> None:
        s = self._s
        if s.drift in ("redundant", "side_goal", "never_answer"):
            s.drift = None

    def _on_refocus(self, intent: Intent) -> None:
        s = self._s
        if s.drift in ("side_goal", "never_answer", "redundant"):
            s.drift = None
        elif s.drift == "fixation" and s.rng.random() < 0.3:
            self._undo_from(s.wrong_from)

    def _on_search_for(self, intent: Intent) -> None:
        s = self._s
        if s.drift in ("side_goal", "never_answer", "redundant"):
            s.drift = None
        s.premature = False
        s.pending, s.pending_arg = "search_for", intent.argument

    def _on_keep_searching(self, intent: Intent) -> None:
        s = self._s
        if s.drift in ("side_goal", "never_answer"):
            s.drift = None
        s.premature = False
        s.pending = "keep_searching"

    def _on_verify(self, intent: Intent) -> None:
        """Re-read everything retrieved: a second chance to recognise evidence, re-extract, or notice a fixation."""
        s, p, rng = self._s, self._p, self._s.rng
        if s.wrong_from is not None:
            if rng.random() < p.verify_skill:
                self._undo_from(s.wrong_from)
            return
        while s.hop < len(s.hops):
            targets = s.hops[s.hop].target_ids
            found = [pid for pid in s.seen_ids if pid in targets]
            if not found or rng.random() >= p.verify_skill:
                break
            self._resolve(found[0])
        if s.hop >= len(s.hops):
            if not s.extract_ok and rng.random() < p.verify_skill:
                s.extract_ok = True
            elif s.extract_ok and rng.random() < p.second_guess:
                s.extract_ok = False  # talked itself out of a right answer
            if s.drift == "redundant":
                s.drift = None
        else:
            s.premature = False
            if s.drift == "never_answer":
                s.drift = None
            s.pending = "verify"

    def _on_reject(self, intent: Intent) -> None:
        """A rejected answer: re-verify; a right answer may be abandoned (over-rejection hurts)."""
        s, p, rng = self._s, self._p, self._s.rng
        was_right = s.hop >= len(s.hops) and s.wrong_from is None and s.extract_ok
        if s.hop >= len(s.hops) and s.wrong_from is None:
            if was_right:
                s.extract_ok = bool(rng.random() >= p.second_guess)
            else:
                s.extract_ok = bool(rng.random() < p.verify_skill * p.extract_skill)
            s.pending = "answer_now"
            return
        if s.hop >= len(s.hops):  # fixated: the agent may notice
            if rng.random() < p.verify_skill:
                self._undo_from(s.wrong_from)
        else:
            s.knows = s.knows and rng.random() < p.verify_skill
        s.premature = False
        s.pending = "keep_searching"

    def _on_backtrack(self, intent: Intent) -> None:
        s = self._s
        if s.wrong_from is not None:
            self._undo_from(s.wrong_from)
        elif s.findings:  # misguided: abandons a correct finding
            self._undo_from(len(s.findings) - 1)

    def _on_plan(self, intent: Intent) -> None:
        s, p = self._s, self._p
        s.hazard_factor *= p.plan_effect
        if s.drift == "never_answer":
            s.drift = None

    def _undo_from(self, index: int | None) -> None:
        s = self._s
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


def _tokens(text: str) -> int:
    """A cheap token count (words), the same for every simulated turn."""
    return len(text.split())
