"""The slow path's action vocabulary: intervention options (from the env's catalogue) and their arguments.

An option is one template of the environment's intervention catalogue; some templates take an argument (what to
search for, which entity to drop). The steerer chooses the argument itself among *spans of the observation*
(titles of retrieved documents, capitalised phrases of the goal, the goal itself), so everything it says is
grounded in what it saw. In ``text`` action mode the filled template is sent; in ``discrete`` mode the catalogue
index is sent and the environment fills the slot its own way.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from steer_envs.errors import SteerEnvsError
from steer_envs.executors.protocol import information_titles, searched_queries
from steer_envs.text import ARGUMENT_ENTITY_RULES, entities

from .features import split_observation, words

PASS_TEXT = "pass"
_WH = re.compile(r"^(?:who|what|which|when|where|why|how|whom|whose|is|was|did|does|do|are|were|in|the)\b\s*", re.I)


#: slots the observation determines by itself; any other slot is a free argument the steerer chooses
BOUND_SLOTS = frozenset({"question", "last_query"})


@dataclass(frozen=True)
class InterventionOption:
    """One choice of the slow path: catalogue index, name, and the catalogue's template text.

    Slots ``{question}`` and ``{last_query}`` are filled from the observation; another slot (``{new_title}``)
    is the option's *argument*, a span the steerer picks among :func:`argument_candidates`.
    """

    index: int
    name: str
    template: str

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(f[1] for f in string.Formatter().parse(self.template) if f[1])

    @property
    def argument_slot(self) -> str | None:
        free = [s for s in self.slots if s not in BOUND_SLOTS]
        return free[0] if free else None

    @property
    def needs_argument(self) -> bool:
        return self.argument_slot is not None

    def render(self, observation: Any, argument: str = "") -> str:
        if not self.slots:
            return self.template
        goal, transcript, _, _ = split_observation(observation)
        queries = searched_queries(transcript)
        values = {"question": goal, "last_query": queries[-1] if queries else goal}
        for slot in self.slots:
            if slot not in BOUND_SLOTS:
                values[slot] = argument or goal
        return self.template.format(**{k: values[k] for k in self.slots})


def _entry_fields(entry: Any) -> tuple[str, str]:
    """(name, template) of one catalogue entry, whatever its shape (object, dict, or plain string)."""
    if isinstance(entry, str):
        return entry, entry
    if isinstance(entry, dict):
        name = entry.get("name") or entry.get("kind") or entry.get("id")
        template = entry.get("template") or entry.get("text")
    else:
        name = getattr(entry, "name", None) or getattr(entry, "kind", None)
        template = getattr(entry, "template", None) or getattr(entry, "text", None)
    if not isinstance(name, str) or not isinstance(template, str):
        raise SteerEnvsError(f"cannot read an intervention template from catalogue entry {entry!r}")
    return name, template


def options_from_catalogue(catalogue: Sequence[Any]) -> list[InterventionOption]:
    """Every catalogue entry except index 0 (pass) becomes an option."""
    options = []
    for i, entry in enumerate(catalogue):
        if i == 0:
            continue
        name, template = _entry_fields(entry)
        options.append(InterventionOption(i, name, template))
    if not options:
        raise SteerEnvsError("the environment's intervention catalogue has no intervention besides pass")
    return options


def argument_candidates(observation: Any, limit: int = 12) -> list[str]:
    """Spans of the observation usable as a template argument, most recent evidence first, deduplicated.

    Titles of retrieved documents that were not searched yet come first (the next hop is usually one of
    them), then capitalised phrases of the goal, then the goal without its question word.
    """
    goal, transcript, _, _ = split_observation(observation)
    searched = {" ".join(words(q)) for q in searched_queries(transcript)}
    spans: list[str] = []
    for block in reversed(information_titles(transcript)):
        spans.extend(title.strip().strip('"') for title in block)
    spans.extend(entities(goal, ARGUMENT_ENTITY_RULES))
    core = _WH.sub("", goal.strip().rstrip("?")).strip()
    if core:
        spans.append(core)
    seen: set[str] = set()
    out: list[str] = []
    for span in spans:
        key = " ".join(words(span))
        if not key or key in seen or key in searched:
            continue
        seen.add(key)
        out.append(span[:120])
        if len(out) >= limit:
            break
    if not out:
        out.append(goal[:120] or "the question")
    return out
