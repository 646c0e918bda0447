"""What each simulated role does on its turn: the words it writes and how its hidden state moves.

Words (nothing an observer could not see decides them): the searcher's facts are sentences of the passages the real
retriever returned for its queries, its queries are the task's own sub-questions and entity names; the planner's
objectives are the question's parts (MuSiQue's recorded sub-questions where the data has them, with "#k" written as
"step k's result"; a later step whose text would name a hidden bridge entity reads "use step k's result to find ...");
the planner's, reader's and summarizer's reasoning are sentences of real recorded search agents
(:mod:`..sim.thoughts`), chosen by the observable situation. Not sourced from recordings (no recorded pipeline exists
in the data): the searcher's ``confidence`` and ``gaps`` (computed from how much of the question the facts cover), the
verifier's whole message (its verdict is hidden behaviour; its wording is templated on the claim, the facts and the
verdict only), and the fixed phrases "insufficient evidence" and "The facts do not state ...".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ...data.scoring import f1 as f1_score
from ...data.scoring import squad_normalize
from ...retrieval.cache import cached_search, search_key
from ...text import PIPELINE_ENTITY_RULES, sentences, tokens
from ...text import entities as _entities
from ..sim.hops import fill_query, is_choice
from ..sim.situation import content_words
from ..sim.thoughts import question_core
from .messages import FAIL, NO_ANSWER, PASS, USER, Handoff, claimed_answer

if TYPE_CHECKING:  # the pipeline as these functions use it, not pipeline.py (which imports this module)
    from .host import PipelineHost as Pipeline

_REF = re.compile(r"#(\d+)")
_YES_NO = ("yes", "no")
MAX_FACT_CHARS = 300

RoleTurn = Callable[["Pipeline", "Handoff | None"], dict[str, Any]]
SIM_ROLES: dict[str, RoleTurn] = {}


def role(name: str) -> Callable[[RoleTurn], RoleTurn]:
    def register(fn: RoleTurn) -> RoleTurn:
        SIM_ROLES[name] = fn
        return fn

    return register


# -- observable helpers ----------------------------------------------------------------------------------------
def best_sentence(text: str, query: str, must_contain: str | None = None) -> str:
    """The sentence of a passage a searcher quotes: one stating ``must_contain`` if any, else the one sharing most
    words with its query."""
    options = sentences(text) or [text]
    if must_contain:
        key = squad_normalize(must_contain)
        stating = [s for s in options if key and key in squad_normalize(s)]
        if stating:
            return stating[0][:MAX_FACT_CHARS]
    words = content_words(query)
    return max(options, key=lambda s: (len(content_words(s) & words), -options.index(s)))[:MAX_FACT_CHARS]


def supports(claim: str | None, facts: Sequence[str], sources: Sequence[str] = ()) -> bool:
    """Whether a fact (or a source title) states the claim: what any verifier can check by reading."""
    key = squad_normalize(claim or "")
    if not key or key == squad_normalize(NO_ANSWER):
        return False
    return any(key in squad_normalize(text) for text in list(facts) + list(sources))


def coverage(question: str, facts: Sequence[str]) -> float:
    goal = content_words(question)
    return len(goal & content_words(" ".join(facts))) / len(goal) if goal else 0.0


#: the names an objective or question is about (:func:`steer_envs.text.entities` with
#: :data:`steer_envs.text.PIPELINE_ENTITY_RULES`: the pipeline's openers, every phrase kept)
entities = partial(_entities, rules=PIPELINE_ENTITY_RULES)


def focus_of(objective: str) -> str:
    names = entities(objective)
    return names[0] if names else " ".join(sorted(content_words(objective))[:3])


def plan_objectives(question: str, hops) -> list[str]:
    """A good decomposition: one objective per hop, written without naming any entity the question does not name."""
    named = {w.lower() for w in tokens(question)}
    core = question_core(question)
    out = []
    for i, hop in enumerate(hops):
        text = _REF.sub(lambda m: f"step {m.group(1)}'s result", hop.query).strip()
        hidden = [e for e in entities(text) if not all(w.lower() in named for w in tokens(e))]
        if i == 0 and (hidden or not text):
            text = question if len(hops) == 1 else core
        elif hidden or not text:
            text = f"use step {i}'s result to find {core}"
        out.append(text)
    if len(out) > 1 and squad_normalize(out[-1]) == squad_normalize(out[-2]):
        out[-1] = f"use step {len(out) - 1}'s result to find {core}"
    return out


# -- planner -------------------------------------------------------------------------------------------------
@role("planner")
def planner_turn(p: Pipeline, inbox: Handoff | None) -> dict[str, Any]:
    s, prof, rng = p.state, p.params, p.state.rng
    eff = s.take_effects("planner")
    multi = len(s.hops) > 1
    if s.plan_ok is None or "redraw" in eff:
        s.plan_ok = not (multi and rng.random() < prof.bad_plan_rate)
    if "decompose" in eff:
        s.plan_ok = True
    if "confused" in eff:
        s.plan_ok = not multi
    objectives = plan_objectives(p.current_task.question, s.hops) if s.plan_ok else [p.current_task.question]
    if eff.get("search_for"):
        objectives.insert(0, eff["search_for"])
    return {
        "subtasks": [{"objective": o, "focus": focus_of(o), "role": "searcher"} for o in objectives],
        "reasoning": p.thought("search", query=objectives[0]),
    }


# -- searcher ------------------------------------------------------------------------------------------------
def run_search(p: Pipeline, query: str, recognise: bool = True) -> list:
    """One real search; the searcher may recognise evidence among the hits (resolving hops) or fixate on a
    distractor. ``recognise=False`` (an LLM searcher): a hop resolves when its passage is among the hits."""
    s, prof, rng = p.state, p.params, p.state.rng
    query = " ".join(query.split())[:300] or p.current_task.question
    hits = [
        replace(h, title=h.title.strip().strip('"').strip())
        for h in cached_search(p.retriever, search_key(p.context.retriever, p.context.data_dir), query, p.context.topk)
    ]
    s.queries.append(query)
    ids = [h.id for h in hits]
    for pid in ids:
        if pid not in s.seen_ids:
            s.seen_ids.append(pid)
    resolved = False
    while not s.evidence_in_hand:
        hop = s.hops[s.hop]
        implicit = not hop.target_ids
        found = ids[:1] if implicit else [pid for pid in ids if pid in hop.target_ids]
        if not found or (recognise and rng.random() >= prof.recognize_skill):
            break
        hit = hits[ids.index(found[0])]
        finding = hit.title if implicit else hop.finding
        p.resolve(finding, (best_sentence(hit.text, query, finding), hit.title))
        resolved = True
        if implicit:
            break
    if recognise and not resolved and not s.evidence_in_hand and s.wrong_from is None:
        distractors = [h for h in hits if h.id not in s.hops[s.hop].target_ids]
        if distractors and rng.random() < prof.fixation_hazard:
            hit = distractors[int(rng.integers(len(distractors)))]
            s.wrong_from = s.hop
            p.resolve(hit.title, (best_sentence(hit.text, query), hit.title))
    return hits


def hop_query(p: Pipeline) -> str:
    s, prof, rng = p.state, p.params, p.state.rng
    index = min(s.hop, len(s.hops) - 1)
    query = fill_query(s.hops[index].query, s.findings) or p.current_task.question
    words = query.rstrip("?").split()
    kept = [w for w in words if rng.random() >= prof.query_noise] or words[:1]
    return " ".join(kept)


def facts_message(p: Pipeline, hits_by_query: Sequence[tuple[str, list]]) -> dict[str, Any]:
    """The searcher's report: the evidence it took (kept across rounds), then this round's best sentences."""
    s, prof = p.state, p.params
    pairs: list[tuple[str, str]] = list(s.evidence_facts)
    for query, hits in hits_by_query:
        for hit in hits:
            pairs.append((best_sentence(hit.text, query), hit.title))
    seen: set[str] = set()
    facts, sources = [], []
    for sentence, title in pairs:
        if sentence in seen:
            continue
        seen.add(sentence)
        facts.append(sentence)
        sources.append(title)
        if len(facts) >= prof.facts_per_message:
            break
    cover = coverage(p.current_task.question, facts)
    confidence = "high" if cover >= 0.6 else "medium" if cover >= 0.35 else "low"
    plan = p.latest("planner")
    objectives = (
        [t.get("objective", "") for t in plan.fields.get("subtasks", []) if isinstance(t, dict)] if plan else []
    )
    covered = content_words(" ".join(facts + sources))
    gaps = [o for o in objectives if content_words(o) and not content_words(o) & covered]
    return {
        "facts": facts,
        "sources": list(dict.fromkeys(sources)),
        "confidence": confidence,
        "gaps": gaps,
        "queries": [q for q, _ in hits_by_query],
    }


@role("searcher")
def searcher_turn(p: Pipeline, inbox: Handoff | None) -> dict[str, Any]:
    s, prof, rng = p.state, p.params, p.state.rng
    eff = s.take_effects("searcher")
    if "recheck" in eff:
        p.recheck_seen()
    planned: list[str] = []
    if eff.get("search_for"):
        planned.append(eff["search_for"])
    hint = inbox.fields.get("next_search_hint") if inbox is not None and inbox.sender == "verifier" else None
    if isinstance(hint, str) and hint.strip() and rng.random() < prof.follow_hint:
        planned.append(hint)
    stuck = s.over_search and s.round_queries and "unstick" not in eff
    searches: list[tuple[str, list]] = []
    if "skip" in eff or "confused" in eff:
        pass  # reports what it has (told to stop searching, or puzzling over a note)
    elif stuck:
        for query in s.round_queries[0][: prof.searches_per_round]:
            searches.append((query, run_search(p, query)))
    else:
        chained = s.plan_ok or "decompose" in eff
        own_allowed = len(s.hops) if chained else 1
        own = 0
        while len(searches) < prof.searches_per_round:
            if planned:
                query = planned.pop(0)
            elif own < own_allowed and (not s.evidence_in_hand or own == 0 and not searches):
                query = (
                    p.current_task.question
                    if not s.plan_ok and s.rounds == 0 and "decompose" not in eff
                    else hop_query(p)
                )
                own += 1
            elif "more" in eff and p.last_titles:
                query = f"{hop_query(p)} {p.last_titles[int(rng.integers(len(p.last_titles)))]}"
                eff.pop("more")
            else:
                break
            searches.append((query, run_search(p, query)))
    if searches:
        p.last_titles = [h.title for _, hits in searches for h in hits]
    s.round_queries.append([q for q, _ in searches])
    s.rounds += 1
    return facts_message(p, searches)


# -- reader --------------------------------------------------------------------------------------------------
def wrong_span(p: Pipeline, facts_sources: Sequence[str]) -> str | None:
    """A plausible wrong value: the other answer of a yes/no or two-option question, else an entity the facts
    name (the fixated bridge first), else nothing."""
    s, rng = p.state, p.state.rng
    gold = p.current_task.golden_answers
    if gold[0].strip().lower() in _YES_NO:
        return "no" if gold[0].strip().lower() == "yes" else "yes"
    if is_choice(p.current_task, s.hops):
        options = [o.strip(" ?,.") for o in re.split(r",| or ", p.current_task.question.split("?")[0])[-2:]]
        others = [o for o in options if o and f1_score(o, gold) < 0.5]
        if others:
            return others[-1]
    pool = ([s.findings[s.wrong_from]] if s.wrong_from is not None and s.wrong_from < len(s.findings) else []) + list(
        facts_sources
    )
    pool = [t for t in dict.fromkeys(pool) if t and f1_score(t, gold) < 0.5]
    if not pool:
        return None
    return pool[0] if s.wrong_from is not None else pool[int(rng.integers(len(pool)))]


@role("reader")
def reader_turn(p: Pipeline, inbox: Handoff | None) -> dict[str, Any]:
    s, prof, rng = p.state, p.params, p.state.rng
    eff = s.take_effects("reader")
    searcher = inbox if inbox is not None and inbox.sender == "searcher" else p.latest("searcher")
    facts = [str(f) for f in searcher.fields.get("facts", [])] if searcher else []
    sources = [str(t) for t in searcher.fields.get("sources", [])] if searcher else []
    basis = (s.hop, s.wrong_from)
    redraw = basis != s.answer_basis or s.doubt or bool(eff.keys() - {"keep"})
    if "keep" in eff and s.answer is not None:
        redraw = False
    if "derailed" in eff:
        s.extract_ok = False
        s.answer, s.answer_basis, redraw = wrong_span(p, sources), basis, False
    if redraw:
        gold = p.current_task.golden_answers[0]
        right_before = s.answer is not None and p.is_right(s.answer)
        if s.evidence_in_hand and s.wrong_from is None:
            if basis != s.answer_basis:
                s.extract_ok = bool(rng.random() < prof.extract_skill)
            elif "verify" in eff or "backtrack" in eff:
                if not s.extract_ok:
                    s.extract_ok = bool(rng.random() < prof.verify_skill)
                elif rng.random() < prof.second_guess:
                    s.extract_ok = False
            elif s.doubt:
                if s.extract_ok and right_before and rng.random() < prof.second_guess:
                    s.extract_ok = False
                elif not s.extract_ok:
                    s.extract_ok = bool(rng.random() < prof.extract_skill)
            answer = gold if s.extract_ok else wrong_span(p, sources)
        elif s.wrong_from is not None:
            answer = wrong_span(p, sources)
        elif "abstain" in eff or "confused" in eff:
            answer = None
        elif s.knows and not (s.doubt and right_before and rng.random() < prof.second_guess):
            answer = gold
        else:
            answer = None if rng.random() < prof.abstain_rate else wrong_span(p, sources)
        s.answer, s.answer_basis = answer, basis
    s.doubt = False
    answer = s.answer
    stating = [(f, t) for f, t in zip(facts, sources) if supports(answer, [f])]
    if answer is None:
        steps = [f"The facts do not state {question_core(p.current_task.question)}."]
    elif stating:
        steps = [stating[0][0]]
    else:
        steps = [p.thought("answer", answer=answer)]
    source = stating[0][1] if stating else "background knowledge"
    return {
        "variables": [
            {"name": focus_of(p.current_task.question), "value": answer, "source": source if answer else None}
        ],
        "steps": [x for x in steps if x],
        "final_values": {"answer": answer},
    }


# -- verifier ------------------------------------------------------------------------------------------------
@role("verifier")
def verifier_turn(p: Pipeline, inbox: Handoff | None) -> dict[str, Any]:
    s, prof, rng = p.state, p.params, p.state.rng
    eff = s.take_effects("verifier")
    claim = claimed_answer(inbox) if inbox is not None and inbox.sender == "reader" else s.answer
    searcher = p.latest("searcher")
    facts = [str(f) for f in searcher.fields.get("facts", [])] if searcher else []
    sources = [str(t) for t in searcher.fields.get("sources", [])] if searcher else []
    supported = supports(claim, facts, sources)
    if claim is None:
        p_fail = 1.0
    else:
        p_fail = (prof.strict_fail if s.strict else prof.lax_fail) if supported else prof.catch_skill
        if "strict_check" in eff:
            p_fail = p_fail + (1 - p_fail) * (prof.second_guess if supported else prof.verify_skill)
        if "flip" in eff:
            p_fail = prof.compliance if eff["flip"] == PASS else p_fail
        if "accept" in eff:
            p_fail = 0.0
        if "confused" in eff:
            p_fail = 0.5
        if eff.get("search_for") or "force_fail" in eff:
            p_fail = 1.0
    verdict = FAIL if rng.random() < p_fail else PASS
    core = question_core(p.current_task.question)
    fields: dict[str, Any] = {"verdict": verdict, "claim": claim}
    if supported:
        fallback = sources[0] if sources else "facts"
        fields["supported"] = [
            f"{claim} ({next((t for f, t in zip(facts, sources) if supports(claim, [f, t])), fallback)})"
        ]
    elif claim is not None:
        fields["unsupported"] = [claim]
    if verdict == FAIL:
        gaps = searcher.fields.get("gaps", []) if searcher else []
        if claim is None:
            fields["missing"] = [core]
        elif supported:
            fields["missing"] = ["a second source confirming the claim"]
        else:
            fields["missing"] = [f"a fact stating {claim}"]
        hint = eff.get("search_for") or (f"{claim} {core}" if claim and supported else (gaps[0] if gaps else core))
        fields["next_search_hint"] = hint
        s.doubt = True
        if claim is not None and p.is_right(claim):
            s.over_rejections += 1
    return fields


def verifier_route(p: Pipeline, fields: dict[str, Any]) -> str:
    if fields.get("verdict") == PASS or p.state.rounds >= p.params.max_rounds:
        return "summarizer"
    return "searcher"


# -- summarizer ------------------------------------------------------------------------------------------------
@role("summarizer")
def summarizer_turn(p: Pipeline, inbox: Handoff | None) -> dict[str, Any]:
    s, prof, rng = p.state, p.params, p.state.rng
    eff = s.take_effects("summarizer")
    claim = claimed_answer(inbox) if inbox is not None and inbox.sender == "verifier" else s.answer
    verdict = inbox.fields.get("verdict") if inbox is not None and inbox.sender == "verifier" else None
    told_evidence = "use_evidence" in eff
    if s.ignores_evidence and not told_evidence:
        own = wrong_span(p, entities(p.current_task.question)) or focus_of(p.current_task.question)
        answer = p.current_task.golden_answers[0] if s.knows else own
    elif (
        claim is None or (verdict != PASS and not told_evidence and rng.random() < prof.defer_on_fail) or "defer" in eff
    ):
        answer = NO_ANSWER
    else:
        answer = claim
    searcher = p.latest("searcher")
    sources = [str(t) for t in searcher.fields.get("sources", [])] if searcher else []
    if (s.verbose or "confused" in eff) and "concise" not in eff and answer != NO_ANSWER:
        padded = p.thought("answer", answer=answer)
        answer = padded if answer in padded else f"{answer}, according to {sources[0] if sources else 'the facts'}"
    return {"final_answer": answer, "reasoning": p.thought("answer", answer=claim or answer), "sources": sources[:3]}


def route(p: Pipeline, sender: str, fields: dict[str, Any]) -> str:
    if sender == "verifier":
        return verifier_route(p, fields)
    return {"planner": "searcher", "searcher": "reader", "reader": "verifier", "summarizer": USER}[sender]
