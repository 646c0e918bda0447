"""CausalLMSteerer: any causal LM (via ``steer_envs.llm`` model folders) as the steering backbone.

* Fast path: one forward pass of a fixed prompt built from ``O(g, s_t)`` that ends in "Answer yes or no";
  ``z = logit(yes) − logit(no)`` of the next token (the log-odds of P(yes) vs P(no)).
* Slow path: one output sequence ``<think> r_t </think>`` followed by an intervention in a fixed grammar::

      Intervention: NAME            (NAME = an option name, or "pass")
      Intervention: NAME: ARGUMENT  (options with a free slot; ARGUMENT = a span of the observation)

  The reasoning tokens are sampled freely (temperature 1, so their log-probs are the policy's); the grammar's
  fixed words are forced; NAME and ARGUMENT are sampled among the grammar's choices with probabilities
  proportional to the model's sequence probabilities. ``log π(output)`` is the sum of those three parts, so
  GRPO's gradient is the gradient of the real sampling distribution.
* Optional LoRA (peft): only adapter weights train and checkpoints hold only them.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from steer_envs.errors import SteerEnvsError

from .interventions import InterventionOption, argument_candidates
from .steerer import SlowSample, Steerer

FAST_QUESTION = (
    "\n\nYou supervise the search agent above. Is it drifting from the goal, so that an intervention now would "
    "change the outcome? Answer yes or no.\nAnswer:"
)
SLOW_INSTRUCTION = (
    "\n\nYou supervise the search agent above. Think briefly inside <think> </think>, then choose one line "
    "'Intervention: NAME' or 'Intervention: NAME: ARGUMENT'. NAME is one of: {names}.\n<think>"
)
THINK_END = "</think>"
GRAMMAR_HEAD = "\nIntervention: "
PASS_NAME = "pass"


def resolve_model_dir(model: str) -> Path:
    """``hf:gemma-3-270m`` (packaged), ``hf:/path`` or a plain path -> a local transformers folder."""
    arg = model[3:] if model.startswith("hf:") else model
    from steer_envs.llm.packaged import PACKAGED_MODELS, packaged_model_dir

    if arg in PACKAGED_MODELS:
        return packaged_model_dir(arg)
    path = Path(arg).expanduser()
    if not (path / "config.json").is_file():
        raise SteerEnvsError(
            f"CausalLMSteerer model {model!r}: {str(path)!r} is not a transformers model folder (no config.json); "
            "use hf:gemma-3-270m or hf:/path/to/folder (nothing is downloaded)"
        )
    return path


class CausalLMSteerer(Steerer):
    kind = "causal_lm"

    def __init__(
        self,
        options: Sequence[InterventionOption],
        model: str = "hf:gemma-3-270m",
        lora: bool = False,
        lora_rank: int = 8,
        max_prompt_tokens: int = 384,
        max_think_tokens: int = 24,
        max_arguments: int = 6,
        allow_pass: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(options)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model_spec, self.lora, self.lora_rank = model, lora, lora_rank
        self.max_prompt_tokens, self.max_think_tokens = max_prompt_tokens, max_think_tokens
        self.max_arguments, self.allow_pass, self.seed = max_arguments, allow_pass, seed
        folder = resolve_model_dir(model)
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        lm = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
        if lora:
            from peft import LoraConfig, get_peft_model

            with torch.random.fork_rng():
                torch.manual_seed(seed)
                lm = get_peft_model(lm, LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, target_modules="all-linear", lora_dropout=0.0))
        self.lm = lm
        self.lm.eval()  # no dropout: sampling and re-scoring must see the same distribution
        self.yes_id = self._first_token(" yes")
        self.no_id = self._first_token(" no")
        if self.yes_id == self.no_id:
            raise SteerEnvsError(f"{model}: ' yes' and ' no' start with the same token; the fast path needs them distinct")
        self.names = [o.name for o in self.options] + ([PASS_NAME] if allow_pass else [])

    # -- helpers --------------------------------------------------------------------------------------------
    def build_spec(self) -> dict[str, Any]:
        return {"model": self.model_spec, "lora": self.lora, "lora_rank": self.lora_rank,
                "max_prompt_tokens": self.max_prompt_tokens, "max_think_tokens": self.max_think_tokens,
                "max_arguments": self.max_arguments, "allow_pass": self.allow_pass, "seed": self.seed}

    def checkpoint_state_dict(self) -> dict[str, torch.Tensor]:
        if not self.lora:
            return self.state_dict()
        keep = {n for n, p in self.named_parameters() if p.requires_grad}
        return {k: v for k, v in self.state_dict().items() if k in keep}

    def load_checkpoint_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        missing, unexpected = self.load_state_dict(state, strict=not self.lora)
        if unexpected:
            raise SteerEnvsError(f"checkpoint does not match this CausalLMSteerer (unexpected keys {unexpected[:3]})")

    def _first_token(self, text: str) -> int:
        return self.tokenizer.encode(text, add_special_tokens=False)[0]

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _prompt_ids(self, observation: Any, suffix: str) -> list[int]:
        """BOS + observation text (middle cut to fit ``max_prompt_tokens``) + ``suffix``."""
        from steer_envs.envs import observation_text

        text = observation_text(observation) if isinstance(observation, dict) else str(observation)
        body, tail = self._ids(text), self._ids(suffix)
        room = max(16, self.max_prompt_tokens - len(tail))
        if len(body) > room:
            head = min(64, room // 3)  # keep the goal at the top and the latest turns at the bottom
            body = body[:head] + body[len(body) - (room - head):]
        bos = [self.tokenizer.bos_token_id] if self.tokenizer.bos_token_id is not None else []
        return bos + body + tail

    def _forward(self, sequences: list[list[int]], keep: int) -> torch.Tensor:
        """Log-softmax logits of the last ``keep`` positions of right-padded sequences: ``[batch, keep, vocab]``.

        Only the positions that are scored get logits: a 262k-token vocabulary (Gemma 3) times every prompt
        position would be gigabytes per call, and autograd keeps them alive until the backward pass."""
        length = max(len(s) for s in sequences)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(sequences), length), pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), length), dtype=torch.long)
        for i, s in enumerate(sequences):
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
        logits = self.lm(input_ids=ids, attention_mask=mask, logits_to_keep=keep).logits
        return torch.log_softmax(logits.float(), dim=-1)

    def _continuation_logprobs(self, prefix: list[int], continuations: list[list[int]]) -> torch.Tensor:
        """``log P(continuation | prefix)`` for each continuation.

        Without gradients: one batched forward pass. With gradients (the update step): one continuation at a time
        under activation checkpointing, so the autograd graph holds a scalar per continuation instead of every
        layer's activations for every prompt position (tens of GB for a 270M model over a round's samples); the
        forward pass is recomputed during backward instead."""
        if not torch.is_grad_enabled():
            return self._score(prefix, continuations)
        from torch.utils.checkpoint import checkpoint

        return torch.stack([checkpoint(self._score, prefix, [c], use_reentrant=False)[0] for c in continuations])

    def _score(self, prefix: list[int], continuations: list[list[int]]) -> torch.Tensor:
        longest = max(len(c) for c in continuations)
        # kept positions start at the prefix's last token, whose logits predict each continuation's first token
        logp = self._forward([prefix + c for c in continuations], keep=longest + 1)
        out = []
        for i, c in enumerate(continuations):
            positions = torch.arange(len(c))
            out.append(logp[i, positions, torch.tensor(c)].sum())
        return torch.stack(out)

    # -- fast path ------------------------------------------------------------------------------------------
    def fast_scores(self, observations: Sequence[Any]) -> torch.Tensor:
        zs = []
        for obs in observations:  # one at a time: prompts differ in length and batches stay small on CPU
            ids = torch.tensor([self._prompt_ids(obs, FAST_QUESTION)])
            if torch.is_grad_enabled():  # activation checkpointing, as in _continuation_logprobs
                from torch.utils.checkpoint import checkpoint

                zs.append(checkpoint(self._yes_no_logit, ids, use_reentrant=False))
            else:
                zs.append(self._yes_no_logit(ids))
        return torch.stack(zs)

    def _yes_no_logit(self, ids: torch.Tensor) -> torch.Tensor:
        logits = self.lm(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
        return logits[self.yes_id] - logits[self.no_id]

    # -- slow path ------------------------------------------------------------------------------------------
    def _slow_prompt(self, observation: Any) -> list[int]:
        return self._prompt_ids(observation, SLOW_INSTRUCTION.format(names=", ".join(self.names)))

    def _sample_think(self, prompt: list[int], generator: torch.Generator, greedy: bool) -> list[int]:
        """Sample reasoning tokens until ``</think>`` appears in the text, EOS, or the token budget."""
        ids = torch.tensor([prompt])
        out = self.lm(input_ids=ids, use_cache=True, logits_to_keep=1)
        past, logits = out.past_key_values, out.logits[0, -1].float()
        think: list[int] = []
        eos = self.tokenizer.eos_token_id
        for _ in range(self.max_think_tokens):
            probs = torch.softmax(logits, dim=-1)
            tok = int(probs.argmax()) if greedy else int(torch.multinomial(probs, 1, generator=generator))
            if tok == eos:
                break
            think.append(tok)
            if THINK_END in self.tokenizer.decode(think[-4:]):
                break
            out = self.lm(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past, logits = out.past_key_values, out.logits[0, -1].float()
        return think

    def _grammar(self, prompt: list[int], think: list[int]) -> list[int]:
        """Prefix up to the NAME choice: prompt + think + the forced ``</think>`` (if missing) + grammar head."""
        closing = [] if THINK_END in self.tokenizer.decode(think[-4:]) else self._ids(THINK_END)
        return prompt + think + closing + self._ids(GRAMMAR_HEAD)

    def _name_choices(self) -> list[list[int]]:
        return [self._ids(name) for name in self.names]

    def _arg_choices(self, spans: list[str]) -> list[list[int]]:
        return [self._ids(": " + span) for span in spans]

    def sample_slow(self, observation: Any, n: int, generator: torch.Generator, greedy: bool = False) -> list[SlowSample]:
        samples = []
        with torch.no_grad():
            prompt = self._slow_prompt(observation)
            spans = argument_candidates(observation, self.max_arguments)
            for _ in range(n):
                think = self._sample_think(prompt, generator, greedy)
                prefix = self._grammar(prompt, think)
                name_logp = torch.log_softmax(self._continuation_logprobs(prefix, self._name_choices()), dim=0)
                pos = int(name_logp.argmax()) if greedy else int(torch.multinomial(name_logp.exp(), 1, generator=generator))
                option = self.options[pos] if pos < len(self.options) else None
                arg_pos, argument = -1, ""
                if option is not None and option.needs_argument and self.choose_arguments:
                    arg_prefix = prefix + self._name_choices()[pos]
                    arg_logp = torch.log_softmax(self._continuation_logprobs(arg_prefix, self._arg_choices(spans)), dim=0)
                    arg_pos = int(arg_logp.argmax()) if greedy else int(torch.multinomial(arg_logp.exp(), 1, generator=generator))
                    argument = spans[arg_pos]
                rationale = self.tokenizer.decode(think).replace(THINK_END, "").strip()
                text = option.render(observation, argument) if option is not None else PASS_NAME
                line = f"{self.names[pos]}" + (f": {argument}" if argument else "")
                samples.append(SlowSample(option, argument, text, rationale,
                                          {"think": think, "name_pos": pos, "arg_pos": arg_pos, "spans": spans,
                                           "output": f"<think>{rationale}</think>{GRAMMAR_HEAD}{line}"}))
        return samples

    def slow_logprobs(self, observation: Any, samples: Sequence[SlowSample]) -> torch.Tensor:
        prompt = self._slow_prompt(observation)
        out = []
        for s in samples:
            think = s.payload["think"]
            lp = torch.zeros(())
            if think:
                lp = lp + self._continuation_logprobs(prompt, [think])[0]
            prefix = self._grammar(prompt, think)
            names = self._name_choices()
            lp = lp + torch.log_softmax(self._continuation_logprobs(prefix, names), dim=0)[s.payload["name_pos"]]
            if s.payload["arg_pos"] >= 0:
                arg_prefix = prefix + names[s.payload["name_pos"]]
                arg_logp = torch.log_softmax(self._continuation_logprobs(arg_prefix, self._arg_choices(s.payload["spans"])), dim=0)
                lp = lp + arg_logp[s.payload["arg_pos"]]
            out.append(lp)
        return torch.stack(out)
