"""AdmissiblePolicy: a small torch network that scores GuidedSearch-v0's admissible set (CPU learner).

The unguided policy ``π_u(a | s)`` is a softmax over the filled slots of a shared two-layer MLP's score of each
candidate's feature row (every column of ``steer_envs.envs.admissible.FEATURE_NAMES`` except the hint columns).

The learner reads the hint the way an instruction-following model reads a plan in its prompt: with probability
``λ`` it does what the hint's next step says (a candidate of the step's kind, chosen by similarity to the hinted
argument: ``h(a) ∝ exp(β · hint_similarity)`` over candidates with a nonzero similarity), otherwise it acts as
without the hint::

    π(a | s, g) = λ · h(a) + (1 − λ) · π_u(a | s)        (π(a | s, g) = π_u(a | s) when no hint step applies)

``λ = sigmoid(hint_logit)`` is trainable; its initial value is the base's instruction following. Following a hint
does not depend on how sure the unguided policy is, so a hint can lead even a confident policy past a barrier; and
what the policy does *without* a hint is carried by the MLP alone, which is what mixed-policy training (the loss
on ``π_u``) has to teach.

The output layer starts at zero, so a fresh policy is exactly uniform over the admissible set whatever the seed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from steer_envs.envs.admissible import FEATURE_NAMES, HINT_COLUMNS

HINT_SIMILARITY = FEATURE_NAMES.index("hint_similarity")
HINT_PRESENT = FEATURE_NAMES.index("hint_present")
_FLOOR = -1e4  # a finite "log 0" for the mixture's empty slots
#: the columns the unguided network reads (the hint enters only through the following component)
UNGUIDED_COLUMNS = tuple(i for i in range(len(FEATURE_NAMES)) if i not in HINT_COLUMNS)


@dataclass(frozen=True)
class PolicySpec:
    """What rebuilds the network (stored next to its weights)."""

    hidden: int = 64
    follow: float = 0.7  # λ at initialisation: probability of doing what the hint's next step says
    sharpness: float = 8.0  # β of h(a) ∝ exp(β · similarity)
    init_seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


class AdmissiblePolicy(nn.Module):
    kind = "admissible"

    def __init__(self, spec: PolicySpec | None = None) -> None:
        super().__init__()
        self.spec = spec or PolicySpec()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.spec.init_seed)
            self.trunk = nn.Sequential(
                nn.Linear(len(UNGUIDED_COLUMNS), self.spec.hidden),
                nn.Tanh(),
                nn.Linear(self.spec.hidden, self.spec.hidden),
                nn.Tanh(),
            )
            self.head = nn.Linear(self.spec.hidden, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        p = min(max(self.spec.follow, 1e-4), 1 - 1e-4)
        self.hint_logit = nn.Parameter(torch.tensor(math.log(p / (1 - p))))
        self.register_buffer("columns", torch.tensor(UNGUIDED_COLUMNS, dtype=torch.long), persistent=False)

    def unguided_logits(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked logits of ``π_u`` (the hint columns are not read)."""
        features = torch.as_tensor(features, dtype=torch.float32)
        mask = torch.as_tensor(mask).bool()
        columns: torch.Tensor = self.columns  # type: ignore[assignment]  # a buffer, typed Tensor | Module
        scores = self.head(self.trunk(features.index_select(-1, columns))).squeeze(-1)
        return scores.masked_fill(~mask, float("-inf"))

    def log_probs(self, features, mask) -> torch.Tensor:
        """``log π(· | s, g)`` over the slots (``-inf`` on empty ones); equals ``log π_u`` without a hint.

        The mixture is computed on finite stand-ins for the empty slots and masked at the end, so no ``-inf − -inf``
        reaches autograd (a NaN gradient would poison every weight)."""
        features = torch.as_tensor(features, dtype=torch.float32)
        mask = torch.as_tensor(mask).bool()
        log_u = torch.log_softmax(self.unguided_logits(features, mask), dim=-1)
        sim = features[..., HINT_SIMILARITY]
        follows = mask & (sim > 0)
        applies = (features[..., HINT_PRESENT].amax(-1) > 0) & follows.any(-1)
        if not bool(applies.any()):
            return log_u
        finite_u = log_u.masked_fill(~mask, _FLOOR)
        log_h = torch.log_softmax((self.spec.sharpness * sim).masked_fill(~follows, _FLOOR), dim=-1)
        lam = torch.sigmoid(self.hint_logit)
        mixed = torch.logaddexp(torch.log(lam) + log_h, torch.log1p(-lam) + finite_u)
        return torch.where(applies.unsqueeze(-1), mixed, finite_u).masked_fill(~mask, float("-inf"))

    def action_log_prob(self, features, mask, actions) -> torch.Tensor:
        logp = self.log_probs(features, mask)
        idx = torch.as_tensor(actions, dtype=torch.long).unsqueeze(-1)
        return logp.gather(-1, idx).squeeze(-1)

    @torch.no_grad()
    def sample(self, features, mask, generator: torch.Generator | None = None, greedy: bool = False) -> torch.Tensor:
        logp = self.log_probs(features, mask)
        if greedy:
            return logp.argmax(-1)
        flat = logp.exp().reshape(-1, logp.shape[-1])
        return torch.multinomial(flat, 1, generator=generator).reshape(logp.shape[:-1])


class AdmissibleLearner:
    """:class:`AdmissiblePolicy` behind the trainer's :class:`~agents.actguide.rollout.RolloutPolicy` protocol
    (discrete action mode; a view is ``(features, mask)``; one "token" per action)."""

    action_mode = "discrete"

    def __init__(self, network: AdmissiblePolicy) -> None:
        self.network = network

    def parameters(self):
        return self.network.parameters()

    @staticmethod
    def view(obs: dict):
        return obs["features"], obs["action_mask"]

    @torch.no_grad()
    def act(self, views, generator: torch.Generator | None = None, greedy: bool = False):
        import numpy as np

        feats = torch.as_tensor(np.stack([v[0] for v in views]))
        mask = torch.as_tensor(np.stack([v[1] for v in views]))
        logp = self.network.log_probs(feats, mask)
        actions = logp.argmax(-1) if greedy else torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        chosen = logp.gather(-1, actions[:, None])
        return [int(a) for a in actions], [c.detach() for c in chosen]

    def token_logprobs(self, views, actions) -> list[torch.Tensor]:
        import numpy as np

        if not views:
            return []
        feats = torch.as_tensor(np.stack([v[0] for v in views]))
        mask = torch.as_tensor(np.stack([v[1] for v in views]))
        logp = self.network.action_log_prob(feats, mask, list(actions))
        return list(logp.unsqueeze(-1).unbind(0))

    def state_dict(self):
        return self.network.state_dict()

    def load_state_dict(self, state, assign: bool = False):
        self.network.load_state_dict(state, assign=assign)
