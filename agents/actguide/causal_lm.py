"""CausalLMLearner: a causal LM (``steer_envs.llm``'s transformers backend) as the ACTGUIDE-RL policy, text mode.

The policy reads ``prompt + transcript`` (the guided prompt carries the hint) and writes one Search-R1 segment,
sampled at temperature 1 with no truncation of the distribution, so the sampled tokens' log-probabilities are the
policy's. A segment ends at ``</search>`` or ``</answer>`` (the closing tag is put back, as the LLM executor does).

Token log-probs come from :meth:`HFBackend.token_logprobs` on the *sampled token ids* (kept in the action, a
:class:`~agents.actguide.rollout.TextAction`) after either prompt: ``π_old(y | guided)`` at sampling time and
``π_θ(y | unguided)`` in the loss, which is ``r_mix`` token by token. Scoring the ids, not the decoded text, matters
because text does not always re-tokenise to the ids that produced it (a merge across the stop string, an
end-of-sequence token, a re-added closing tag): the ratio must compare the probabilities of the same tokens.
A plain string (a demonstration, a forced action) is tokenised once by :meth:`CausalLMLearner.encode_action`.

The model sits on ``device`` in ``dtype`` (bf16 on GPUs); log-probs come back in fp32 on that device, so whatever
mixes them with advantages and masks builds those there. The model is a private copy (``shared=False``), so
training it never changes a backend someone else holds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import torch

from steer_envs.errors import SteerEnvsError
from steer_envs.executors.llm_search import closing_tag
from steer_envs.executors.protocol import STOP_SEQUENCES
from steer_envs.llm.base import GenerationConfig
from steer_envs.llm.registry import make_backend

from .rollout import TextAction

#: a stand-in for an empty generation's text (the env reads it as an invalid action; its ids are the sampled ones)
EMPTY_ACTION = " "
DTYPES = ("float32", "bfloat16")
_DEVICE = re.compile(r"^(cpu|auto|cuda(:\d+)?)$")


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
    #: where the model runs: "cpu", "cuda" / "cuda:N", or "auto" (the first GPU when there is one, else the CPU)
    device: str = "cpu"
    #: the weights' dtype: "float32", or "bfloat16" (half the memory; log-probs are still computed in fp32)
    dtype: str = "float32"
    #: sequences per forward pass when scoring (sampling batches by the backend's ``max_batch``)
    micro_batch: int = 8

    def __post_init__(self) -> None:
        if self.trainable_layers is not None and self.trainable_layers < 1:
            raise SteerEnvsError(
                f"learner_args: trainable_layers must be a positive number of blocks, or left "
                f"out to train every block; got {self.trainable_layers}"
            )
        if not _DEVICE.match(str(self.device)):
            raise SteerEnvsError(f"learner_args: device must be 'cpu', 'cuda', 'cuda:N' or 'auto'; got {self.device!r}")
        if self.dtype not in DTYPES:
            raise SteerEnvsError(f"learner_args: dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")
        if int(self.micro_batch) < 1:
            raise SteerEnvsError(
                f"learner_args: micro_batch must be a positive number of sequences; got {self.micro_batch}"
            )

    def resolved_device(self) -> str:
        """The torch device to load on; a GPU asked for on a machine without one is a clear error."""
        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise SteerEnvsError(
                f"learner_args: device={self.device!r} but torch sees no GPU (torch.cuda.is_available() "
                "is False); use device='cpu', or 'auto' to take a GPU only where there is one"
            )
        return self.device

    def to_dict(self) -> dict:
        return asdict(self)


def transformer_blocks(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's stack of transformer blocks: its largest ``ModuleList`` (``model.layers`` in Gemma, Llama and
    Qwen, ``transformer.h`` in GPT-2), found by shape rather than by name so any causal LM works."""
    stacks = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) > 0]
    if not stacks:
        raise SteerEnvsError(
            f"{type(model).__name__} has no stack of transformer blocks (no ModuleList); leave "
            "trainable_layers out to train the whole model"
        )
    return max(stacks, key=lambda m: sum(p.numel() for p in m.parameters()))


class CausalLMLearner:
    action_mode = "text"
    kind = "causal_lm"

    def __init__(self, spec: CausalLMSpec | None = None) -> None:
        self.spec = spec or CausalLMSpec()
        backend = make_backend(self.spec.model, shared=False, device=self.spec.resolved_device(), dtype=self.spec.dtype)
        self.backend: Any = cast(Any, backend)  # an hf: backend: its model, tokenizer and token log-probs
        if not hasattr(self.backend, "token_logprobs"):
            raise SteerEnvsError(
                f"learner_args: model={self.spec.model!r} is not a local model the learner can train "
                "(no token log-probs); use hf:<folder> or hf:gemma-3-270m"
            )
        self.model = self.backend.model
        if self.spec.trainable_layers is not None:
            blocks = transformer_blocks(self.model)
            if self.spec.trainable_layers > len(blocks):
                raise SteerEnvsError(
                    f"learner_args: trainable_layers={self.spec.trainable_layers} but "
                    f"{self.spec.model} has {len(blocks)} transformer blocks; use at most {len(blocks)}"
                )
            self.model.requires_grad_(False)
            blocks[-self.spec.trainable_layers :].requires_grad_(True)
        if not self.spec.train_embeddings:
            self.model.get_input_embeddings().weight.requires_grad_(False)  # tied models freeze the output layer too

    # -- RolloutPolicy protocol -------------------------------------------------------------------------------
    def view(self, obs: dict) -> str:
        return obs["prompt"] + obs["transcript"][-self.spec.max_transcript_chars :]

    @property
    def device(self) -> torch.device:
        return self.model.device

    @torch.no_grad()
    def act(self, views: Sequence[str], generator: torch.Generator | None = None, greedy: bool = False):
        """One sampled segment per view, as :class:`TextAction` (text + sampled token ids), and the per-token
        log-probs of those ids after the view (the behaviour policy's, fp32, on the model's device)."""
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator)) if generator is not None else None
        config = GenerationConfig(self.spec.max_new_tokens, 0.0 if greedy else 1.0, 1.0, stop=STOP_SEQUENCES, seed=seed)
        self.model.eval()
        samples = self.backend.generate_with_ids(list(views), config)
        actions = [
            TextAction((s.generation.text + closing_tag(s.generation)) or EMPTY_ACTION, s.token_ids) for s in samples
        ]
        logps = self.backend.token_logprobs(
            [s.prompt_ids for s in samples],
            [a.token_ids for a in actions],
            grad=False,
            micro_batch=self.spec.micro_batch,
        )
        return actions, logps

    def encode_action(self, action: str) -> TextAction:
        """``action`` with its token ids: a :class:`TextAction` as it is; a plain string (a demonstration, a forced
        action) tokenised once, without special tokens, so later scoring reuses these ids."""
        if isinstance(action, TextAction):
            return action
        ids = self.backend.tokenizer.encode(str(action), add_special_tokens=False)
        if not ids:
            raise SteerEnvsError(f"action {action!r} tokenises to nothing; a text action needs at least one token")
        return TextAction(action, ids)

    def token_logprobs(self, views: Sequence[str], actions: Sequence[str]) -> list[torch.Tensor]:
        """Per-token log-probs of each action's ids after its view (with gradient), ``micro_batch`` sequences per
        forward pass; fp32 tensors on the model's device."""
        if len(views) != len(actions):
            raise SteerEnvsError(f"got {len(views)} views but {len(actions)} actions; pass one action per view")
        if not views:
            return []
        prompts = self.backend.encode_prompts(list(views), room=self.spec.max_new_tokens)
        responses = [self.encode_action(a).token_ids for a in actions]
        return self.backend.token_logprobs(prompts, responses, grad=True, micro_batch=self.spec.micro_batch)

    # -- parameters and state --------------------------------------------------------------------------------------
    def parameters(self):
        return self.model.parameters()

    def state_dict(self):
        return self.model.state_dict()

    def load_state_dict(self, state, assign: bool = False) -> None:
        """``assign=True`` takes ``state``'s tensors as the weights instead of copying them (see
        :func:`~agents.actguide.trainer.load_learner`); the output layer is then tied to the embedding again."""
        self.model.load_state_dict(state, assign=assign)
        if assign:
            self.model.tie_weights()

    def frozen(self) -> CausalLMLearner:
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
