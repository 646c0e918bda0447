"""Reading supervisors' notes by meaning (MiniLM sentence embeddings against intent prototypes).

Every simulated component that receives guidance (the searcher, the hand-off pipeline's roles) reads it here, so
that paraphrases of one request behave alike and any string gets a defined response.
"""

from __future__ import annotations

from .intents import INTENT_SETS, NONE, SEARCHER, IntentSet, IntentSpec, get_intent_set, register_intent_set
from .reader import NoteReader, Reading, note_argument, read_note, shared_reader

__all__ = [
    "INTENT_SETS",
    "NONE",
    "SEARCHER",
    "IntentSet",
    "IntentSpec",
    "NoteReader",
    "Reading",
    "get_intent_set",
    "note_argument",
    "read_note",
    "register_intent_set",
    "shared_reader",
]
