"""The interface every steering backbone implements (encoder, causal LM), so agent and trainer are shared.

A backbone owns the parameters θ and offers the steering method's two paths:

* fast path: ``fast_scores(observations) -> z`` (log-odds that intervening now matters), differentiable;
* slow path: ``sample_slow(observation, n)`` draws ``n`` (rationale, intervention) outputs without gradient,
  and ``slow_logprobs(observation, samples)`` re-scores them with gradient for GRPO.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .interventions import PASS_TEXT, InterventionOption


@dataclass
class SlowSample:
    """One slow-path output. ``option`` is a position in the steerer's option list, or ``None`` for pass.

    ``text`` is what a text-mode environment receives; ``action_index`` the catalogue index for discrete mode;
    ``payload`` is backbone data needed to re-score the sample (generated token ids, argument position).
    """

    option: InterventionOption | None
    argument: str
    text: str
    rationale: str
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def is_pass(self) -> bool:
        return self.option is None

    @property
    def action_index(self) -> int:
        return 0 if self.option is None else self.option.index

    def to_action(self, action_mode: str) -> int | str:
        if action_mode == "discrete":
            return self.action_index
        return PASS_TEXT if self.option is None else self.text


class Steerer(nn.Module, ABC):
    """Base class of steering backbones."""

    #: registry key of the backbone, stored in checkpoints
    kind: str = ""
    #: added to the slow path's pass logit at deployment (backbones with a pass option set it; see baselines.handoff)
    pass_bias: float

    def __init__(self, options: Sequence[InterventionOption]) -> None:
        super().__init__()
        self.options = list(options)
        #: whether the slow path chooses the argument of an option with a free slot. In ``discrete`` action mode the
        #: environment fills the slot itself and discards any chosen argument, so a steerer acting there must not
        #: sample one, nor give its log-probability gradient (it would be noise into the shared encoder)
        self.choose_arguments = True

    def counters(self) -> dict[str, int]:
        """Cumulative counts of what this steerer did that a decision's outcome does not show (prompts fitted to
        the context, unparseable outputs; :mod:`steer_envs.policy_counters`). None here; backbones that fit prompts
        or parse text override it."""
        return {}

    def set_action_mode(self, action_mode: str) -> None:
        """Adapt the slow path to the environment's action mode (see :attr:`choose_arguments`)."""
        self.choose_arguments = action_mode != "discrete"

    @abstractmethod
    def fast_scores(self, observations: Sequence[Any]) -> torch.Tensor:
        """Fast-path log-odds ``z`` for each observation (shape ``[n]``), with gradient."""

    @abstractmethod
    def sample_slow(
        self, observation: Any, n: int, generator: torch.Generator, greedy: bool = False
    ) -> list[SlowSample]:
        """Draw ``n`` slow-path outputs for one observation (no gradient)."""

    @abstractmethod
    def slow_logprobs(self, observation: Any, samples: Sequence[SlowSample]) -> torch.Tensor:
        """``log π_θ(sample | observation)`` for each sample (shape ``[len(samples)]``), with gradient."""

    @abstractmethod
    def build_spec(self) -> dict[str, Any]:
        """JSON-able constructor arguments, so a checkpoint can rebuild the same architecture."""

    def checkpoint_state_dict(self) -> dict[str, torch.Tensor]:
        """What a checkpoint stores (all weights here; adapters only for a LoRA backbone)."""
        return self.state_dict()

    def load_checkpoint_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.load_state_dict(state)

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]
