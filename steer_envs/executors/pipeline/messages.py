"""Hand-off messages of the five-role pipeline: who speaks to whom, and the JSON each role writes.

The shapes follow TacoMAS's public code (the multi-agent pipeline of the steering method, docs/methods.md): the
planner writes ``subtasks`` (objective, focus, role) and ``reasoning``; the searcher ``facts``, ``sources``,
``confidence`` (high/medium/low) and ``gaps``; the reader (TacoMAS's calculator) ``variables`` (with their source),
``steps`` and ``final_values``; the verifier an explicit ``verdict`` PASS/FAIL with supported / unsupported / missing
claims and a ``next_search_hint``; the summarizer ``final_answer``, ``reasoning`` and ``sources``. A message travels
as JSON *text*, so an LLM-backed role and a simulated one are interchangeable; :func:`parse_message` reads any text
leniently (a missing verdict counts as FAIL, as in TacoMAS).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

ROLES: tuple[str, ...] = ("planner", "searcher", "reader", "verifier", "summarizer")
USER = "user"
RECEIVERS: tuple[str, ...] = ROLES + (USER,)
#: the fixed order; the verifier routes by its verdict (PASS -> summarizer, FAIL -> searcher)
NEXT_ROLE: dict[str, str] = {"planner": "searcher", "searcher": "reader", "reader": "verifier", "summarizer": USER}
PASS, FAIL = "PASS", "FAIL"
NO_ANSWER = "insufficient evidence"
MAX_MESSAGE_CHARS = 4000


@dataclass(frozen=True)
class Handoff:
    """One message between roles. ``text`` is what was written (JSON for simulated roles, whatever an LLM wrote);
    ``fields`` is its parsed view, the only thing downstream roles read. ``notes`` are the supervisor's notes
    attached to it; ``retry`` counts how often its sender redid it after a rejection."""

    index: int
    sender: str
    receiver: str
    text: str
    fields: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    notes: tuple[str, ...] = ()
    retry: int = 0

    def line(self) -> str:
        """One line of the observation's history."""
        notes = "".join(f" [note: {n}]" for n in self.notes)
        return f"[{self.index}] {self.sender} -> {self.receiver}: {self.text}{notes}"


def render_message(fields: dict[str, Any]) -> str:
    """JSON text of a message, empty fields left out (what a role that has nothing to say writes)."""
    kept = {k: v for k, v in fields.items() if v not in (None, "", [], {})}
    return json.dumps(kept, ensure_ascii=False)[:MAX_MESSAGE_CHARS]


_OBJECT = re.compile(r"\{.*\}", re.S)
_VERDICT = re.compile(r"\b(PASS|FAIL)\b", re.I)


def _string_field(text: str, *keys: str) -> str | None:
    for key in keys:
        m = re.search(rf'"?{key}"?\s*[:=]\s*"([^"\n]*)"', text, re.I) or re.search(
            rf'"?{key}"?\s*[:=]\s*([^,\n}}]+)', text, re.I
        )
        if m and m.group(1).strip():
            return m.group(1).strip()
    return None


def parse_message(role: str, text: str) -> dict[str, Any]:
    """The fields of ``text`` as written by ``role``: its JSON object if it has one, else what can be read from it.

    Every string parses: a verifier text with no PASS/FAIL is a FAIL; a reader or summarizer text with no answer
    field gives its first line as the answer; a planner text with no subtasks gives none."""
    fields: dict[str, Any] = {}
    m = _OBJECT.search(text or "")
    if m:
        try:
            parsed = json.loads(m.group(0))
            if isinstance(parsed, dict):
                fields = parsed
        except json.JSONDecodeError:
            fields = {}
    text = text or ""
    if role == "verifier":
        verdict = str(fields.get("verdict", "")).upper()
        if verdict not in (PASS, FAIL):
            found = _VERDICT.search(text)
            verdict = found.group(1).upper() if found else FAIL
        fields["verdict"] = verdict
        if "next_search_hint" not in fields:
            hint = _string_field(text, "next_search_hint", "hint")
            if hint:
                fields["next_search_hint"] = hint
    elif role == "reader":
        values = fields.get("final_values")
        if not isinstance(values, dict) or "answer" not in values:
            answer = _string_field(text, "answer", "value")
            fields["final_values"] = {"answer": answer if answer is not None else _first_line(text)}
    elif role == "summarizer":
        if not isinstance(fields.get("final_answer"), str):
            answer = _string_field(text, "final_answer", "answer")
            fields["final_answer"] = answer if answer is not None else _first_line(text)
    elif role == "searcher":
        if not isinstance(fields.get("facts"), list):
            fields["facts"] = []
        if not isinstance(fields.get("queries"), list):
            query = _string_field(text, "query", "search")
            fields["queries"] = [query] if query else []
    elif role == "planner":
        subtasks = fields.get("subtasks")
        if not isinstance(subtasks, list):
            fields["subtasks"] = []
    return fields


def _first_line(text: str) -> str | None:
    for line in (text or "").splitlines():
        line = line.strip().strip("{}\"' ")
        if line:
            return line[:200]
    return None


def claimed_answer(handoff: Handoff | None) -> str | None:
    """The answer a hand-off carries: the reader's extracted value, the verifier's claim, the summary's answer."""
    if handoff is None:
        return None
    f = handoff.fields
    if handoff.sender == "reader":
        values = f.get("final_values")
        value = values.get("answer") if isinstance(values, dict) else None
    elif handoff.sender == "verifier":
        value = f.get("claim")
    elif handoff.sender == "summarizer":
        value = f.get("final_answer")
    else:
        value = None
    return str(value) if value not in (None, "") else None
