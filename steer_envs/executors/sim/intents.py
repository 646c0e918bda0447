"""A small deterministic intent grammar: how the simulated searcher understands a supervisor's text.

Real executors read guidance as free text; the simulator needs to map it to a behaviour change. The grammar
reads the note's *head* (the text before the first ':' — templates put their filled-in arguments after it,
so a question that contains the word 'repeat' cannot trigger 'stop repeating') and tries the rules in order;
the first that matches wins. A note no rule matches is read but has no effect (it still costs budget).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

IntentKind = Literal[
    "answer_now", "stop_repeating", "refocus", "search_for", "keep_searching", "verify", "backtrack", "plan", "reject", "none"
]
INTENT_KINDS: tuple[str, ...] = (
    "answer_now", "stop_repeating", "refocus", "search_for", "keep_searching", "verify", "backtrack", "plan",
)
MAX_HEAD = 400


@dataclass(frozen=True)
class Intent:
    kind: IntentKind
    argument: str = ""


_SEARCH_FOR = re.compile(r"^\s*(?:please\s+|now\s+)?(?:search|look\s+up|query)\b\s*(?:for|about)?\s*:?\s*(?P<arg>.*)$", re.I | re.S)
_RULES: tuple[tuple[IntentKind, re.Pattern], ...] = (
    ("backtrack", re.compile(r"\bbacktrack|\bgo back\b|\bwrong (?:entity|track|path|person|lead)|\breconsider\b", re.I)),
    ("verify", re.compile(r"\bverify|\bdouble[- ]check|\bcheck (?:the |your )?(?:evidence|documents|sources)|\bre-?read", re.I)),
    ("stop_repeating", re.compile(r"\b(?:stop|don'?t|do not|avoid)\b.{0,20}\b(?:repeat|re-?search|same (?:query|search))|\balready searched", re.I)),
    ("keep_searching", re.compile(r"\b(?:keep|continue) search|\bsearch (?:more|again|further)|\b(?:don'?t|do not) answer yet|\bnot enough evidence|\bdoes not answer", re.I)),
    ("answer_now", re.compile(r"\banswer (?:now|immediately|right away)|\bgive (?:your|the) (?:final )?answer|\bstop searching|\benough evidence", re.I)),
    ("refocus", re.compile(r"\b(?:re-?focus|focus|stay on|back to)\b.{0,30}\b(?:goal|question|task)|\boff[- ]topic|\birrelevant", re.I)),
    ("plan", re.compile(r"\bplan\b|\bstep\s*1\b|\bfirst\b.{0,60}\bthen\b|\bsub-?questions?", re.I)),
)


def head_of(text: str) -> str:
    head, sep, _ = text.partition(":")
    return (head if sep else text)[:MAX_HEAD]


def parse_intent(text: str) -> Intent:
    """Map a note to an :class:`Intent`. Deterministic; any string is accepted."""
    head = head_of(text)
    m = _SEARCH_FOR.match(head) if head.strip() else None
    if m is not None and m.group("arg").split()[:1] not in (["more"], ["again"], ["further"]):
        _, sep, tail = text.partition(":")
        argument = (tail if sep else m.group("arg")).strip()
        return Intent("search_for", " ".join(argument.split()[:32]))
    for kind, pattern in _RULES:
        if pattern.search(head):
            return Intent(kind)
    return Intent("none")
