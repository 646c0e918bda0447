"""Observation features of the hand-off pipeline (HandoffSteering-v0) for the encoder steerer.

What "should I intervene at this hand-off" depends on is the pipeline's *behaviour* as the messages show it: who
hands what to whom; whether the verifier FAILs a claim it lists as supported (the over-rejection pattern) or
PASSes one no fact states; whether the summary's answer differs from the verified claim, abstains or is padded;
whether the searcher re-runs earlier queries or reports the same facts again; whether a multi-part question got a
one-step plan; how many FAIL rounds there were. Everything is read from the observation's text (the bounded
history and the current hand-off, as ``transcript`` lines ``[i] sender -> receiver: {json}``), never from
simulator state, so the features exist for LLM roles too.

Hashed n-grams cover the goal (question shape) and the current message's own words outside the facts it quotes
(passage sentences are task-specific; hashing them lets a small model memorise training tasks), plus structural
tokens (``verifier>searcher&FAIL&supported``) and their conjunctions.
"""

from __future__ import annotations

import json
import re

import numpy as np

from steer_envs.data.scoring import squad_normalize
from steer_envs.executors.pipeline import NO_ANSWER, RECEIVERS, ROLES, Handoff, claimed_answer
from steer_envs.executors.pipeline.roles import supports

from .features import HashedFeatures, HashedNgramFeaturizer, _bucket, content_words, goal_entities, words

_LINE = re.compile(r"^\[(\d+)\] (\w+) -> (\w+): (.*)$")
_COMPARISON = frozenset(
    "or both same either neither older younger first earlier later more less longer shorter".split()
)

STAT_NAMES: tuple[str, ...] = (
    *(f"sender_{r}" for r in ROLES),
    *(f"receiver_{r}" for r in RECEIVERS),
    "verdict_pass",
    "verdict_fail",
    "claim_supported",
    "fail_despite_support",
    "pass_unsupported",
    "claim_missing",
    "claim_yes_no",
    "claim_in_goal",
    "reader_answer_in_facts",
    "answer_changed",
    "final_differs_from_claim",
    "final_abstains",
    "final_longer_than_claim",
    "final_words",
    "facts",
    "confidence_high",
    "confidence_low",
    "gaps",
    "queries_repeat_earlier",
    "facts_repeat_previous",
    "plan_steps_one",
    "goal_multi_part",
    "fails_so_far",
    "rounds",
    "retry",
    "turn",
    "interventions",
    "goal_len",
    "goal_entities",
    "goal_comparison",
)
FAST_EXTRA_NAMES: tuple[str, ...] = ("turn_late", "no_claim_yet")


def parse_line(line: str) -> Handoff | None:
    """One history line ``[i] sender -> receiver: {json}`` (a cut-off or non-JSON message parses to no fields)."""
    m = _LINE.match(line.strip())
    if not m:
        return None
    try:
        fields, _ = json.JSONDecoder().raw_decode(m.group(4))
    except json.JSONDecodeError:
        fields = {}
    return Handoff(int(m.group(1)), m.group(2), m.group(3), m.group(4), fields if isinstance(fields, dict) else {})


def parse_transcript(transcript: str) -> list[Handoff]:
    return [h for h in (parse_line(line) for line in transcript.splitlines()) if h is not None]


def _latest(handoffs: list[Handoff], sender: str) -> Handoff | None:
    return next((h for h in reversed(handoffs) if h.sender == sender), None)


def handoff_stats(goal: str, transcript: str, turn: int, interventions: int) -> np.ndarray:
    """The :data:`STAT_NAMES` statistics, each scaled to roughly [0, 1]."""
    handoffs = parse_transcript(transcript)
    current = handoffs[-1] if handoffs else None
    earlier = handoffs[:-1]
    f = current.fields if current else {}
    searcher = _latest(handoffs, "searcher")
    facts = (
        [str(x) for x in searcher.fields.get("facts", [])] + [str(x) for x in searcher.fields.get("sources", [])]
        if searcher
        else []
    )
    reader = _latest(handoffs, "reader")
    claim = claimed_answer(current) if current and current.sender in ("reader", "verifier") else claimed_answer(reader)
    verdict = f.get("verdict") if current and current.sender == "verifier" else None
    supported = bool(f.get("supported")) if verdict else supports(claim, facts)
    final = claimed_answer(current) if current and current.sender == "summarizer" else None
    readers = [h for h in handoffs if h.sender == "reader"]
    previous_answer = claimed_answer(readers[-2]) if len(readers) >= 2 else None
    earlier_queries = {q.lower() for h in earlier if h.sender == "searcher" for q in h.fields.get("queries", [])}
    searchers = [h for h in handoffs if h.sender == "searcher"]
    plan = _latest(handoffs, "planner")
    goal_words = content_words(goal)
    entities = goal_entities(goal)
    goal_toks = words(goal)
    multi = len(entities) >= 2 or any(w in _COMPARISON for w in goal_toks) or goal.lower().count(" of ") >= 2
    claim_words = content_words(claim or "")
    stats = [
        *(float(current is not None and current.sender == r) for r in ROLES),
        *(float(current is not None and current.receiver == r) for r in RECEIVERS),
        float(verdict == "PASS"),
        float(verdict == "FAIL"),
        float(supported),
        float(verdict == "FAIL" and supported),
        float(verdict == "PASS" and not supported),
        float(claim is None or squad_normalize(claim) == squad_normalize(NO_ANSWER)),
        float((claim or "").strip().lower() in ("yes", "no")),
        float(bool(claim_words) and claim_words <= goal_words),
        float(current is not None and current.sender == "reader" and supports(claim, facts)),
        float(
            previous_answer is not None
            and claim is not None
            and squad_normalize(previous_answer) != squad_normalize(claim)
        ),
        float(
            final is not None
            and claimed_answer(reader) is not None
            and squad_normalize(final) != squad_normalize(claimed_answer(reader) or "")
        ),
        float(final is not None and squad_normalize(final) == squad_normalize(NO_ANSWER)),
        float(final is not None and claim is not None and len(final.split()) > len(claim.split()) + 2),
        min(len((final or "").split()), 20) / 20.0,
        min(len(searcher.fields.get("facts", [])) if searcher else 0, 5) / 5.0,
        float(searcher is not None and searcher.fields.get("confidence") == "high"),
        float(searcher is not None and searcher.fields.get("confidence") == "low"),
        float(bool(searcher and searcher.fields.get("gaps"))),
        float(
            current is not None
            and current.sender == "searcher"
            and any(q.lower() in earlier_queries for q in f.get("queries", []))
        ),
        float(len(searchers) >= 2 and searchers[-1].fields.get("facts") == searchers[-2].fields.get("facts")),
        float(plan is not None and len(plan.fields.get("subtasks", [])) == 1),
        float(multi),
        min(sum(1 for h in handoffs if h.sender == "verifier" and h.fields.get("verdict") == "FAIL"), 4) / 4.0,
        min(len(searchers), 5) / 5.0,
        float(len(earlier) > 0 and earlier[-1].sender == (current.sender if current else "")),
        min(turn, 30) / 30.0,
        min(interventions, 10) / 10.0,
        min(len(goal_toks), 40) / 40.0,
        min(len(entities), 4) / 4.0,
        float(any(w in _COMPARISON for w in goal_toks)),
    ]
    return np.asarray(stats, dtype=np.float32)


class HandoffFeaturizer(HashedNgramFeaturizer):
    """Hashed n-grams of the goal and the current message (outside its quoted facts), structural tokens, and
    :func:`handoff_stats`; memoised per observation by the base class."""

    stat_names = STAT_NAMES
    fast_extra_names = FAST_EXTRA_NAMES

    def _add(self, token: str, counts: dict[int, int]) -> None:
        b = _bucket(token, self.dim)
        counts[b] = counts.get(b, 0) + 1

    def _compute(self, goal: str, transcript: str, turn: int, interventions: int) -> HashedFeatures:
        counts: dict[int, int] = {}
        self._ngrams("g", words(goal), counts)
        handoffs = parse_transcript(transcript)
        stats = handoff_stats(goal, transcript, turn, interventions)
        named = dict(zip(STAT_NAMES, stats.tolist()))
        if handoffs:
            h = handoffs[-1]
            own = {k: v for k, v in h.fields.items() if k not in ("facts", "sources", "steps", "reasoning")}
            for w in words(json.dumps(own, ensure_ascii=False)):
                self._add("m|" + w, counts)
            shape = f"{h.sender}>{h.receiver}"
            verdict = h.fields.get("verdict", "")
            for token in (
                shape,
                f"{shape}&{verdict}",
                f"{shape}&{verdict}&sup={named['claim_supported']:.0f}",
                f"{shape}&fails={named['fails_so_far'] * 4:.0f}",
                f"{shape}&retry={named['retry']:.0f}",
                f"{shape}&differs={named['final_differs_from_claim']:.0f}&abst={named['final_abstains']:.0f}",
                f"{shape}&plan1={named['plan_steps_one']:.0f}&multi={named['goal_multi_part']:.0f}",
                f"{shape}&repeat={named['queries_repeat_earlier']:.0f}",
                f"iv={min(interventions, 5)}",
            ):
                self._token(token, counts)
        ids = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        weights = np.log1p(np.fromiter(counts.values(), dtype=np.float32, count=len(counts)))
        fails = named["fails_so_far"]
        extra = np.asarray([float(turn >= 20), float(named["claim_missing"] and fails == 0)], dtype=np.float32)
        return HashedFeatures(ids, weights, stats, extra)

    def rationale(self, stats: np.ndarray) -> str:
        s = dict(zip(STAT_NAMES, stats.tolist()))
        sender = next((r for r in ROLES if s[f"sender_{r}"]), "?")
        receiver = next((r for r in RECEIVERS if s[f"receiver_{r}"]), "?")
        verdict = "PASS" if s["verdict_pass"] else "FAIL" if s["verdict_fail"] else "-"
        return (
            f"{sender} -> {receiver}, verdict {verdict}, "
            f"claim {'supported' if s['claim_supported'] else 'unsupported'}, "
            f"{round(s['fails_so_far'] * 4)} FAIL(s) so far"
        )
