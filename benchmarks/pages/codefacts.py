"""Facts about the code that a page states, read from the code itself so the page cannot drift from it.

Why: a fact such as "2x64 tanh MLP", "λ₀ = 0.7" or "k1 0.9, b 0.4" written as a Python string goes wrong on the
page when the policy, its initial hint following or the retriever's parameters change. Each fact here is read
from the config dataclass defaults or the model's layers.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def dataclass_defaults(cls: type, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The default value of each field of the dataclass ``cls`` (of ``names`` only, in that order, if given)."""
    instance = cls()
    keys = names if names is not None else tuple(f.name for f in fields(cls))
    return {name: getattr(instance, name) for name in keys}


def mlp_shape(module) -> str:
    """``2x64 tanh`` for a ``Sequential`` of (Linear, activation) pairs: depth x width and the activation."""
    import torch.nn as nn

    linears = [m for m in module if isinstance(m, nn.Linear)]
    acts = {type(m).__name__.lower() for m in module if not isinstance(m, nn.Linear)}
    widths = {m.out_features for m in linears}
    width = widths.pop() if len(widths) == 1 else "/".join(str(m.out_features) for m in linears)
    return f"{len(linears)}x{width} {'/'.join(sorted(acts))}".strip()


def admissible_policy() -> dict[str, Any]:
    """The ACTGUIDE learner: its trunk's shape and its initial hint following λ₀ (``PolicySpec`` defaults)."""
    from agents.actguide.policy import AdmissiblePolicy, PolicySpec

    spec = PolicySpec()
    return {"mlp": mlp_shape(AdmissiblePolicy(spec).trunk), "lambda0": spec.follow}


def bm25() -> dict[str, Any]:
    """The default retriever's BM25 parameters (``BM25Config`` defaults)."""
    from steer_envs.retrieval.bm25 import BM25Config

    return dataclass_defaults(BM25Config, ("k1", "b"))


def admissible_slots() -> dict[str, int]:
    """The GuidedSearch env's discrete admissible set: query and answer slots (``ActGuideConfig`` defaults)."""
    from agents.actguide.config import ActGuideConfig

    return dataclass_defaults(ActGuideConfig, ("max_queries", "max_answers"))
