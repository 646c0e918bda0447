"""Hypothesis strategies for hostile text: any unicode (control characters, lone surrogates, right-to-left
marks, emoji), tag soup (nested, unclosed and stray protocol tags), and megabyte strings built from both."""

from __future__ import annotations

from hypothesis import strategies as st

TAGS = (
    "<search>",
    "</search>",
    "<answer>",
    "</answer>",
    "<think>",
    "</think>",
    "<information>",
    "</information>",
    "<guidance>",
    "</guidance>",
    "<|begin_of_query|>",
    "<|end_of_query|>",
    "<|begin_of_documents|>",
    "<|end_of_documents|>",
    "\\boxed{",
    "{",
    "}",
    "Doc 1(Title: ",
    ") ",
    "(1)",
    ":",
    "Search for:",
    "Intervention: ",
    "My previous action is invalid.",
    "\n\n",
    "\x00",
    "\r",
    "\t",
    "\u202e",
    "\ud800",
    "é",
    "🙂",
    "ß",
    "İ",
    "\u0301",
)
WORDS = (
    "answer",
    "search",
    "now",
    "verify",
    "stop",
    "repeating",
    "backtrack",
    "the",
    "question",
    "plan",
    "Paris",
    "keep",
    "searching",
    "evidence",
    "pass",
    "accept",
    "reject",
    "refocus",
    "goal",
    "first",
    "then",
)

any_text = st.text(alphabet=st.characters(), max_size=300)
tag_soup = st.lists(st.one_of(st.sampled_from(TAGS), st.sampled_from(WORDS), st.text(max_size=8)), max_size=60).map(
    "".join
)
hostile_text = st.one_of(any_text, tag_soup)
#: about a megabyte: a hostile piece repeated (generating a fresh megabyte per example would be the slow part)
megabyte_text = (
    st.one_of(any_text, tag_soup).filter(bool).map(lambda piece: (piece * (1_000_000 // len(piece) + 1))[:1_000_000])
)
