"""The reader's label: does a passage hold a gold answer?

The same normalisation the answer metrics use (SQuAD's ``normalize_answer``, :func:`steer_envs.data.scoring.
squad_normalize`: lower case, no punctuation, no articles) on both sides, matched on whole words (``"1961"`` is not
held by ``"19610"``, ``"may"`` is not held by ``"mayor"``). An empty normalised answer (``"the"``) never matches.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..data.scoring import squad_normalize


def normalised_answers(golden_answers: Iterable[str]) -> tuple[str, ...]:
    """The golden answers as the label compares them (normalised, empty ones dropped, order kept)."""
    if isinstance(golden_answers, str):
        golden_answers = [golden_answers]
    return tuple(dict.fromkeys(a for a in (squad_normalize(str(g)) for g in golden_answers) if a))


def holds_answer(passage: str, golden_answers: Iterable[str]) -> bool:
    """Whether the normalised passage contains a normalised golden answer as a run of whole words."""
    text = f" {squad_normalize(passage)} "
    return any(f" {answer} " in text for answer in normalised_answers(golden_answers))
