"""Answer scoring, each metric the max over the golden answers.

Two families are implemented because papers differ and the difference matters for reported numbers:

* ``f1`` (the default) follows ASearcher's evaluation: every punctuation character becomes a space, whitespace
  is collapsed, text is lower-cased, articles are **kept**, and precision / recall are computed over **sets**
  of tokens.
* ``squad_em`` / ``squad_f1`` follow SQuAD's ``normalize_answer`` (lower, strip punctuation, drop a/an/the,
  collapse whitespace) with F1 over token **bags** (multiset overlap), as Search-R1 and FlashRAG report.
* ``cover_em``: every token of a golden answer appears in the prediction (normalised as SQuAD).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable

from ..errors import unknown_name

#: str.translate tables: one C pass over the text instead of a Python generator over its characters (the scores
#: are computed several times an episode, in every env step of a rollout)
_PUNCT_TO_SPACE = str.maketrans({ch: " " for ch in string.punctuation})
_PUNCT_DROPPED = str.maketrans({ch: None for ch in string.punctuation})
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def asearcher_normalize(text: str) -> str:
    """ASearcher: punctuation -> space, lower-case, collapse whitespace (articles kept)."""
    return " ".join(text.lower().translate(_PUNCT_TO_SPACE).split())


def squad_normalize(text: str) -> str:
    """SQuAD ``normalize_answer``: lower, remove punctuation, remove articles, collapse whitespace."""
    text = text.lower().translate(_PUNCT_DROPPED)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _asearcher_f1_single(prediction: str, gold: str) -> float:
    pred = set(asearcher_normalize(prediction).split())
    ref = set(asearcher_normalize(gold).split())
    common = pred & ref
    if not common:
        return 0.0
    precision = len(common) / len(pred)
    recall = len(common) / len(ref)
    return 2 * precision * recall / (precision + recall)


def _squad_f1_single(prediction: str, gold: str) -> float:
    pred = squad_normalize(prediction).split()
    ref = squad_normalize(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    overlap = sum((Counter(pred) & Counter(ref)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred)
    recall = overlap / len(ref)
    return 2 * precision * recall / (precision + recall)


def _squad_em_single(prediction: str, gold: str) -> float:
    return float(squad_normalize(prediction) == squad_normalize(gold))


def _cover_em_single(prediction: str, gold: str) -> float:
    pred = set(squad_normalize(prediction).split())
    ref = squad_normalize(gold).split()
    return float(bool(ref) and all(tok in pred for tok in ref))


def _best(single: Callable[[str, str], float]) -> Callable[[str | None, Iterable[str]], float]:
    def metric(prediction: str | None, golden_answers: Iterable[str]) -> float:
        if prediction is None:
            return 0.0
        if isinstance(golden_answers, str):
            golden_answers = [golden_answers]
        return max((single(prediction, g) for g in golden_answers), default=0.0)

    metric.__doc__ = f"max over golden answers of {single.__name__.strip('_')}"
    return metric


f1 = _best(_asearcher_f1_single)
squad_f1 = _best(_squad_f1_single)
squad_em = _best(_squad_em_single)
cover_em = _best(_cover_em_single)

#: Registry of answer metrics by name; ``em`` is SQuAD exact match.
METRICS: dict[str, Callable[[str | None, Iterable[str]], float]] = {
    "f1": f1,
    "squad_f1": squad_f1,
    "squad_em": squad_em,
    "em": squad_em,
    "cover_em": cover_em,
}


def get_metric(name: str) -> Callable[[str | None, Iterable[str]], float]:
    try:
        return METRICS[name]
    except KeyError:
        raise unknown_name("metric", name, list(METRICS)) from None


def score_all(prediction: str | None, golden_answers: Iterable[str]) -> dict[str, float]:
    """All metrics at once (what env ``info`` and eval records carry)."""
    answers = list(golden_answers)
    return {name: fn(prediction, answers) for name, fn in METRICS.items() if name != "em"} | {
        "em": squad_em(prediction, answers)
    }
