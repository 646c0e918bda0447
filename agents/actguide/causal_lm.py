"""CausalLMLearner: a causal LM (``steer_envs.llm``'s transformers backend) as the ACTGUIDE-RL policy, text mode.

The policy reads ``prompt + transcript`` (the guided prompt carries the hint) and writes one Search-R1 segment,
sampled at temperature 1 with no truncation of the distribution, so the sampled tokens' log-probabilities are the
policy's. A segment ends at ``</search>`` or ``</answer>`` (the closing tag is put back, as the LLM executor does).

Token log-probs come from :meth:`HFBackend.continuation_logprobs` on the *same response text* after either prompt:
``π_old(y | guided)`` at sampling time and ``π_θ(y | unguided)`` in the loss, which is ``r_mix`` token by token.
The model is a private copy (``shared=False``), so training it never changes a backend someone else holds.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch

from steer_envs.errors import SteerEnvsError
from steer_envs.executors.llm_search import closing_tag
from steer_envs.executors.protocol import STOP_SEQUENCES
from steer_envs.llm.base import GenerationConfig
from steer_envs.llm.registry import make_backend

#: a stand-in for an empty generation (the env reads it as an invalid action; it still has a token to score)
EMPTY_ACTION = " "


@dataclass(frozen=True)
class CausalLMSpec:
    model: str = "hf:gemma-3-270m"
    max_new_tokens: int = 48
    max_transcript_chars: int = 2000  # the prompt (question + hint) is kept whole; the transcript's tail is kept
    #: train the token embeddings too. Off by default: in a small model most weights are the embedding table
    #: (Gemma 3 270M: 170M of 270M, tied to the output layer), and freezing it saves its gradient and Adam state
    #: and lets the KL reference share it, which keeps a Gemma training step within a laptop's memory.
    train_embeddings: bool = False
    #: train only the last N transformer blocks (None: every block). Gradients and Adam state, and the KL
    #: reference's copy, then cover those blocks only: the usual way to fine-tune a model on a machine that cannot
    #: hold three extra copies of it (the suite's Gemma 3 270M step: 2.8 GB peak with N=4, 3.65 GB with all 18).
    trainable_layers: int | None = None

    def __post_init__(self) -> None:
        if self.trainable_layers is not None and self.trainable_layers < 1:
            raise SteerEnvsError(f"learner_args: trainable_layers must be a positive number of blocks, or left "
                                 f"out to train every block; got {self.trainable_layers}")

    def to_dict(self) -> dict:
        return asdict(self)


def transformer_blocks(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's stack of transformer blocks: its largest ``ModuleList`` (``model.layers`` in Gemma, Llama and
    Qwen, ``transformer.h`` in GPT-2), found by shape rather than by name so any causal LM works."""
    stacks = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) > 0]
    if not stacks:
        raise SteerEnvsError(f"{type(model).__name__} has no stack of transformer blocks (no ModuleList); leave "
                             "trainable_layers out to train the whole model")
    return max(stacks, key=lambda m: sum(p.numel() for p in m.parameters()))


class CausalLMLearner:
    action_mode = "text"
    kind = "causal_lm"

    def __init__(self, spec: CausalLMSpec | None = None) -> None:
        self.spec = spec or CausalLMSpec()
        self.backend = make_backend(self.spec.model, shared=False)
        self.model = self.backend.model
        if self.spec.trainable_layers is not None:
            blocks = transformer_blocks(self.model)
            if self.spec.trainable_layers > len(blocks):
                raise SteerEnvsError(f"learner_args: trainable_layers={self.spec.trainable_layers} but "
                                     f"{self.spec.model} has {len(blocks)} transformer blocks; use at most {len(blocks)}")
            self.model.requires_grad_(False)
            blocks[-self.spec.trainable_layers:].requires_grad_(True)
        if not self.spec.train_embeddings:
            self.model.get_input_embeddings().weight.requires_grad_(False)  # tied models freeze the output layer too

    # -- RolloutPolicy protocol -------------------------------------------------------------------------------
    def view(self, obs: dict) -> str:
        return obs["prompt"] + obs["transcript"][-self.spec.max_transcript_chars:]

    @torch.no_grad()
    def act(self, views: Sequence[str], generator: torch.Generator | None = None, greedy: bool = False):
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator)) if generator is not None else None
        config = GenerationConfig(self.spec.max_new_tokens, 0.0 if greedy else 1.0, 1.0, stop=STOP_SEQUENCES, seed=seed)
        self.model.eval()
        gens = self.backend.generate(list(views), config)
        actions = [(g.text + closing_tag(g)) or EMPTY_ACTION for g in gens]
        logps = self.backend.continuation_logprobs(list(views), actions, reduce="none", grad=False)
        return actions, [lp.detach() for lp in logps]

    def token_logprobs(self, views: Sequence[str], actions: Sequence[str]) -> list[torch.Tensor]:
        if not views:
            return []
        out: list[torch.Tensor] = []
        step = max(1, getattr(self.backend, "max_batch", 8))
        for i in range(0, len(views), step):
            out.extend(self.backend.continuation_logprobs(list(views[i : i + step]), list(actions[i : i + step]),
                                                          reduce="none", grad=True))
        return out

    # -- parameters and state --------------------------------------------------------------------------------------
    def parameters(self):
        return self.model.parameters()

    def state_dict(self):
        return self.model.state_dict()

    def load_state_dict(self, state) -> None:
        self.model.load_state_dict(state)

    def frozen(self) -> "CausalLMLearner":
        """An independent, untrainable copy with the current weights (the KL reference). It is copied in memory
        rather than loaded again, and shares the tensors the learner never trains (the embedding table)."""
        import copy

        shared = {id(p): p for p in self.model.parameters() if not p.requires_grad}
        ref = copy.copy(self)
        ref.backend = copy.copy(self.backend)
        ref.backend.stats = type(self.backend.stats)()
        ref.model = ref.backend.model = copy.deepcopy(self.model, memo=dict(shared))
        for p in ref.model.parameters():
            p.requires_grad_(False)
        return ref
