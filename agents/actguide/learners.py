"""Building the learner named by a config (``admissible`` network or ``causal_lm``) and its frozen reference."""

from __future__ import annotations

import copy
from typing import Any

from steer_envs.errors import unknown_name

from .policy import AdmissibleLearner, AdmissiblePolicy, PolicySpec


def build_learner(kind: str, args: dict[str, Any], seed: int = 0):
    """A fresh learner. ``admissible``: :class:`PolicySpec` fields (``hidden``, ``hint_weight``); ``causal_lm``:
    :class:`~agents.actguide.causal_lm.CausalLMSpec` fields (``model``, ``max_new_tokens``, ...)."""
    if kind == "admissible":
        fields = {k: v for k, v in args.items() if k in PolicySpec.__dataclass_fields__}
        fields.setdefault("init_seed", seed)
        return AdmissibleLearner(AdmissiblePolicy(PolicySpec(**fields)))
    if kind == "causal_lm":
        from .causal_lm import CausalLMLearner, CausalLMSpec

        return CausalLMLearner(CausalLMSpec(**args))
    raise unknown_name("learner", kind, ["admissible", "causal_lm"])


def frozen_copy(learner):
    """The reference policy π_ref of the KL term: the learner as it is now, never trained."""
    if hasattr(learner, "frozen"):  # a learner holding a model backend makes its own copy
        return learner.frozen()
    ref = copy.deepcopy(learner)
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref
