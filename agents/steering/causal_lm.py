"""CausalLMSteerer: any causal LM (via ``steer_envs.llm`` model folders) as the steering backbone.

* Fast path: one forward pass of a fixed prompt built from ``O(g, s_t)`` that ends in "Answer yes or no";
  ``z = logit(yes) − logit(no)`` of the next token (the log-odds of P(yes) vs P(no)). Observations are scored
  in padded batches of ``batch_size`` (``micro_batch`` with gradients), with attention masks and explicit
  position ids, so a batched z equals the one-at-a-time z whichever side is padded.
* Slow path: one output sequence ``<think> r_t </think>`` followed by an intervention in a fixed grammar::

      Intervention: NAME            (NAME = an option name, or "pass")
      Intervention: NAME: ARGUMENT  (options with a free slot; ARGUMENT = a span of the observation)

  The reasoning tokens are sampled freely by transformers ``generate`` (all ``G`` samples in one call,
  ``num_return_sequences=G``, temperature 1 and no top-k/top-p, stopped at ``</think>``), so their log-probs are
  the policy's; the sampled token ids are kept, never re-tokenised from text. The grammar's fixed words are
  forced; NAME and ARGUMENT are sampled among the grammar's choices with probabilities proportional to the
  model's sequence probabilities (all samples' choices scored in one batched pass). ``log π(output)`` is the sum
  of those three parts, so GRPO's gradient is the gradient of the real sampling distribution;
  :meth:`CausalLMSteerer.slow_logprobs` re-scores the same ids in one batched pass per sample set, in
  ``micro_batch`` chunks under activation checkpointing.
* Prompts fit the model's context (:mod:`.context_fit`): the prompt budget is ``max_prompt_tokens``, capped by the
  model's context (its config) less the tokens the slow path appends (``max_think_tokens`` and the grammar);
  tokens are counted with the model's tokenizer; the goal stays, the oldest turns are elided behind a visible
  marker, and :attr:`CausalLMSteerer.context_stats` counts what was elided. Whole turns rather than a cut in the
  middle of the tokens, so the model never reads half an ``<information>`` block.
* Loaded through the backend layer (``make_backend("hf:…", device=…, dtype=…)``), on any device and dtype.
* Optional LoRA (peft), or QLoRA (LoRA over a 4-bit base, bitsandbytes on a CUDA GPU): only adapter weights train
  and checkpoints hold only them; :meth:`CausalLMSteerer.save_adapter` writes a peft adapter folder
  (``save_pretrained``) that ``peft.PeftModel.from_pretrained`` and vLLM's ``--enable-lora`` load.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from steer_envs.errors import SteerEnvsError
from steer_envs.extras import import_extra
from steer_envs.llm.offline import LOCAL_LOAD

from .context_fit import (
    MAX_PROMPT_TOKENS,
    PREFIX_PROBE,
    ContextStats,
    GoalDoesNotFitError,
    fit_prompt_ids,
    goal_refusal,
    prompt_token_budget,
    special_prefix,
)
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
#: where :meth:`CausalLMSteerer.save_artifacts` writes a LoRA steerer's peft adapter, beside ``model.pt``
ADAPTER_DIR = "adapter"
#: how many trailing reasoning tokens are decoded to look for ``</think>`` (8 characters: at most 8 tokens)
_THINK_END_WINDOW = 8
#: tokens the slow path appends after the reasoning (forced ``</think>``, the grammar head, a NAME, an ARGUMENT)
GRAMMAR_RESERVE = 64
PADDING_SIDES = ("left", "right")


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


def resolve_device(device: str) -> str:
    """``"auto"`` -> the best device present (cuda, then mps, then cpu); anything else is checked, not guessed."""
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as err:
        raise SteerEnvsError(
            f"device {device!r} is not a torch device ({err}); use 'cpu', 'cuda', 'cuda:1' or 'auto'"
        ) from err
    if kind == "cuda" and not torch.cuda.is_available():
        raise SteerEnvsError(
            f"device {device!r}: torch {torch.__version__} sees no CUDA GPU here; use device='cpu', or 'auto' to take "
            "a GPU only where there is one"
        )
    return device


def resolve_dtype(dtype: str) -> torch.dtype:
    value = getattr(torch, dtype, None) if isinstance(dtype, str) else None
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise SteerEnvsError(f"dtype {dtype!r} is not a floating-point torch dtype; use float32, bfloat16 or float16")
    return value


class _StepLogProbs:
    """A ``generate`` logits processor that records ``log p(token)`` of every sampled token, one step at a time.

    It sees each step's scores before the token is drawn and reads which token was drawn at the next call, so it
    holds one ``[rows, vocab]`` table at a time (``output_scores`` would keep all of them). It must see the
    distribution that is sampled: the steerer's generation config turns every warper off (temperature 1, no
    top-k/top-p), so the scores here are the sampling distribution."""

    def __init__(self) -> None:
        self.pending: torch.Tensor | None = None
        self.steps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.pending is not None:
            self.steps.append(self.pending.gather(-1, input_ids[:, -1:]).squeeze(-1))
        self.pending = torch.log_softmax(scores.float(), dim=-1)
        return scores

    def finish(self, sequences: torch.Tensor) -> torch.Tensor:
        """``[rows, generated]`` log-probs, given generate's output (whose last column is the last drawn token)."""
        if self.pending is not None:
            self.steps.append(self.pending.gather(-1, sequences[:, -1:]).squeeze(-1))
            self.pending = None
        if not self.steps:
            return torch.zeros((sequences.shape[0], 0), device=sequences.device)
        return torch.stack(self.steps, dim=1)


class CausalLMSteerer(Steerer):
    kind = "causal_lm"

    def __init__(
        self,
        options: Sequence[InterventionOption],
        model: str = "hf:gemma-3-270m",
        lora: bool = False,
        lora_rank: int = 8,
        max_prompt_tokens: int = MAX_PROMPT_TOKENS,
        max_think_tokens: int = 24,
        max_arguments: int = 6,
        allow_pass: bool = True,
        seed: int = 0,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 16,
        micro_batch: int = 8,
        padding_side: str = "left",
        gradient_checkpointing: bool = False,
        qlora: bool = False,
        adapter: str | None = None,
    ) -> None:
        """``device``: "cpu", "cuda", "cuda:N" or "auto"; ``dtype``: "float32", "bfloat16", "float16".
        ``batch_size``: observations (or scored sequences) per forward pass without gradients; ``micro_batch``:
        per forward pass with gradients (each under activation checkpointing). ``padding_side``: how the fast
        path pads its batches. ``gradient_checkpointing``: the model's own per-layer checkpointing (large models;
        replaces the whole-pass checkpointing in training mode). ``qlora``: LoRA over a 4-bit base (needs
        bitsandbytes and a CUDA GPU; implies ``lora``). ``adapter``: a peft adapter folder to start from."""
        super().__init__(options)
        for name, value in (
            ("batch_size", batch_size),
            ("micro_batch", micro_batch),
            ("max_think_tokens", max_think_tokens),
        ):
            if not isinstance(value, int) or value < 1:
                raise SteerEnvsError(f"CausalLMSteerer {name} must be a positive integer, got {value!r}")
        if padding_side not in PADDING_SIDES:
            raise SteerEnvsError(f"CausalLMSteerer padding_side must be one of {PADDING_SIDES}, got {padding_side!r}")
        lora = lora or qlora
        self.model_spec, self.lora, self.lora_rank, self.qlora = model, lora, lora_rank, qlora
        self.max_prompt_tokens, self.max_think_tokens = max_prompt_tokens, max_think_tokens
        self.max_arguments, self.allow_pass, self.seed = max_arguments, allow_pass, seed
        self.device_spec, self.dtype_name = device, dtype
        self.batch_size, self.micro_batch, self.padding_side = batch_size, micro_batch, padding_side
        self.gradient_checkpointing, self.adapter = gradient_checkpointing, adapter
        torch_dtype = resolve_dtype(dtype)
        folder = resolve_model_dir(model)
        run_on = resolve_device(device)
        lm, self.tokenizer = (
            self._load_4bit(folder, run_on, torch_dtype) if qlora else self._load_through_backend(folder, run_on, dtype)
        )
        if gradient_checkpointing and not qlora:  # prepare_model_for_kbit_training switched it on for QLoRA
            lm.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        from steer_envs.llm.hf import model_context_length

        #: tokens the model reads at once (its config's), or None when the config does not say
        self.context_length = model_context_length(lm.config, self.tokenizer)
        self.context_stats = ContextStats()
        lm = self._attach_adapters(lm, run_on)
        self.lm = lm
        self.lm.eval()  # no dropout: sampling and re-scoring must see the same distribution
        self._prefix: list[int] | None = None  # prompt_prefix, read from the tokenizer on first use
        self.yes_id = self._first_token(" yes")
        self.no_id = self._first_token(" no")
        if self.yes_id == self.no_id:
            raise SteerEnvsError(
                f"{model}: ' yes' and ' no' start with the same token; the fast path needs them distinct"
            )
        self.names = [o.name for o in self.options] + ([PASS_NAME] if allow_pass else [])
        self.eos_ids = self._eos_ids()
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.eos_ids, default=0)

    # -- loading ----------------------------------------------------------------------------------------------
    @staticmethod
    def _load_through_backend(folder: Path, device: str, dtype: str):
        from steer_envs.llm.registry import make_backend

        backend: Any = make_backend(f"hf:{folder}", shared=False, device=device, dtype=dtype)  # own copy: it trains
        return backend.model, backend.tokenizer

    def _load_4bit(self, folder: Path, device: str, dtype: torch.dtype):
        """QLoRA's base: the model quantised to 4-bit NF4 at load time (the backend layer loads full precision)."""
        if torch.device(device).type != "cuda":
            raise SteerEnvsError(
                f"qlora=True needs a CUDA GPU (bitsandbytes' 4-bit kernels), but the device is {device!r}; use "
                "lora=True without qlora on this machine, or device='cuda' on a GPU machine"
            )
        try:
            import bitsandbytes  # noqa: F401 - only its presence is checked here
        except ImportError as err:
            raise SteerEnvsError(
                "qlora=True needs bitsandbytes (`pip install bitsandbytes`); or use lora=True"
            ) from err
        prepare_model_for_kbit_training = import_extra("peft", "llm", "QLoRA").prepare_model_for_kbit_training
        from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

        quant = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype
        )
        lm = AutoModelForCausalLM.from_pretrained(
            folder,
            quantization_config=quant,
            dtype=dtype,
            device_map={"": torch.device(device).index or 0},
            **LOCAL_LOAD,
        )
        lm = prepare_model_for_kbit_training(
            lm,
            use_gradient_checkpointing=self.gradient_checkpointing,
            gradient_checkpointing_kwargs={"use_reentrant": False},
        )
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        return lm, tokenizer

    def _attach_adapters(self, lm, device: str):
        if self.adapter is not None:
            PeftModel = import_extra("peft", "llm", "a steerer adapter").PeftModel  # noqa: N806 - the class

            if not (Path(self.adapter) / "adapter_config.json").is_file():
                raise SteerEnvsError(
                    f"adapter {self.adapter!r} is not a peft adapter folder (no adapter_config.json); "
                    "pass a folder written by save_adapter (a LoRA run's adapter/)"
                )
            return PeftModel.from_pretrained(lm, self.adapter, is_trainable=self.lora)
        if not self.lora:
            return lm
        peft = import_extra("peft", "llm", "a LoRA steerer (lora=True)")
        LoraConfig, get_peft_model = peft.LoraConfig, peft.get_peft_model  # noqa: N806 - the class

        cuda = [torch.device(device).index or 0] if torch.device(device).type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(self.seed)
            config = LoraConfig(
                r=self.lora_rank,
                lora_alpha=2 * self.lora_rank,
                target_modules="all-linear",
                lora_dropout=0.0,
                task_type="CAUSAL_LM",
            )
            return get_peft_model(lm, config)

    # -- helpers --------------------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return next(self.lm.parameters()).device

    def counters(self) -> dict[str, int]:
        """How its prompts were fitted to the context (:class:`~.context_fit.ContextStats`)."""
        return self.context_stats.as_dict()

    def build_spec(self) -> dict[str, Any]:
        return {
            "model": self.model_spec,
            "lora": self.lora,
            "lora_rank": self.lora_rank,
            "max_prompt_tokens": self.max_prompt_tokens,
            "max_think_tokens": self.max_think_tokens,
            "max_arguments": self.max_arguments,
            "allow_pass": self.allow_pass,
            "seed": self.seed,
            "device": self.device_spec,
            "dtype": self.dtype_name,
            "batch_size": self.batch_size,
            "micro_batch": self.micro_batch,
            "padding_side": self.padding_side,
            "gradient_checkpointing": self.gradient_checkpointing,
            "qlora": self.qlora,
            "adapter": self.adapter,
        }

    def checkpoint_state_dict(self) -> dict[str, torch.Tensor]:
        if not self.lora:
            return self.state_dict()
        keep = {n for n, p in self.named_parameters() if p.requires_grad}
        return {k: v for k, v in self.state_dict().items() if k in keep}

    def load_checkpoint_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        missing, unexpected = self.load_state_dict(state, strict=not self.lora)
        if unexpected:
            raise SteerEnvsError(f"checkpoint does not match this CausalLMSteerer (unexpected keys {unexpected[:3]})")

    def save_adapter(self, folder: str | Path) -> Path:
        """Write the LoRA adapter as a peft folder (``adapter_config.json`` + ``adapter_model.safetensors``).

        ``peft.PeftModel.from_pretrained(base, folder)`` reloads it, vLLM serves it with ``--enable-lora
        --lora-modules steerer=<folder>``, and ``CausalLMSteerer(..., adapter=folder)`` starts from it. The folder
        is written beside and then swapped in, so a crash never leaves half an adapter."""
        if not self.lora:
            raise SteerEnvsError(
                "save_adapter: this steerer has no LoRA adapter (lora=False); its weights are the "
                "whole model: use save_model / the run's model.pt"
            )
        folder = Path(folder)
        fresh, stale = folder.with_name(folder.name + ".writing"), folder.with_name(folder.name + ".old")
        for leftover in (fresh, stale):
            shutil.rmtree(leftover, ignore_errors=True)
        self.lm.save_pretrained(fresh)
        if folder.exists():
            folder.rename(stale)
        fresh.rename(folder)
        shutil.rmtree(stale, ignore_errors=True)
        return folder

    def save_artifacts(self, model_path: str | Path) -> None:
        """What the trainer's ``save_model`` writes beside the suite checkpoint: a LoRA steerer's adapter folder
        (``<run>/adapter/`` beside ``<run>/model.pt``; ``<stem>.adapter/`` beside any other file name)."""
        if self.lora:
            model_path = Path(model_path)
            name = ADAPTER_DIR if model_path.name == "model.pt" else f"{model_path.stem}.{ADAPTER_DIR}"
            self.save_adapter(model_path.parent / name)

    def _eos_ids(self) -> set[int]:
        ids = set()
        for value in (
            self.tokenizer.eos_token_id,
            getattr(getattr(self.lm, "generation_config", None), "eos_token_id", None),
        ):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(int(v) for v in value)
        return ids

    def _first_token(self, text: str) -> int:
        return self.tokenizer.encode(text, add_special_tokens=False)[0]

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    @property
    def prompt_budget(self) -> int:
        """Tokens a prompt may take: ``max_prompt_tokens``, capped by the model's context less what the slow path
        generates and appends after the prompt (``max_think_tokens`` + :data:`GRAMMAR_RESERVE`)."""
        return prompt_token_budget(self.max_prompt_tokens, self.context_length, self.max_think_tokens + GRAMMAR_RESERVE)

    @property
    def prompt_prefix(self) -> list[int]:
        """The ids before every prompt: those the tokenizer puts before a text (:func:`~.context_fit.special_prefix`),
        which a server serving this model puts before a prompt too, so a served steerer reads the same ids."""
        prefix = getattr(self, "_prefix", None)
        if prefix is None:
            with_special = self.tokenizer.encode(PREFIX_PROBE, add_special_tokens=True)
            prefix = self._prefix = special_prefix(with_special, self._ids(PREFIX_PROBE))
        return prefix

    def _prompt_ids(self, observation: Any, suffix: str) -> list[int]:
        """:attr:`prompt_prefix` (BOS where the tokenizer adds one) + observation text fitted to
        :attr:`prompt_budget` (:func:`~.context_fit.fit_prompt_ids`: the goal kept, the oldest turns elided behind a
        marker; tokens counted with this tokenizer) + ``suffix``."""
        try:
            ids, fitted = fit_prompt_ids(
                observation, self._ids(suffix), self.prompt_prefix, self.prompt_budget, self._ids
            )
        except GoalDoesNotFitError as exc:
            generated = self.max_think_tokens + GRAMMAR_RESERVE
            raise goal_refusal(
                exc, self.prompt_budget, self.max_prompt_tokens, self.context_length, generated
            ) from None
        self.context_stats.record(fitted)
        return ids

    def _pad(self, sequences: list[list[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``input_ids``, ``attention_mask`` and ``position_ids`` (0 at each row's first real token) on the model's
        device. Explicit positions make left padding exact: a row's tokens sit at the positions they have alone."""
        width = max(len(s) for s in sequences)
        ids = torch.full((len(sequences), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for i, s in enumerate(sequences):
            cols = slice(width - len(s), width) if left else slice(0, len(s))
            ids[i, cols] = torch.tensor(s, dtype=torch.long)
            mask[i, cols] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        device = self.device
        return ids.to(device), mask.to(device), positions.to(device)

    def _checkpointed(self, fn, *args) -> torch.Tensor:
        """``fn(*args)``, under whole-pass activation checkpointing when gradients are being recorded: the graph
        then holds only each micro-batch's inputs and its few scored numbers, not every layer's activations (tens
        of GB for a 270M model over a round's samples); the pass is recomputed during backward. With the model's
        own per-layer checkpointing on (``gradient_checkpointing``, training mode) that already bounds memory."""
        if not torch.is_grad_enabled() or (self.gradient_checkpointing and self.lm.training):
            return fn(*args)
        from torch.utils.checkpoint import checkpoint

        return checkpoint(fn, *args, use_reentrant=False)

    def _chunk(self) -> int:
        return self.micro_batch if torch.is_grad_enabled() else self.batch_size

    def _row_logprobs(self, rows: list[list[int]], starts: list[int]) -> torch.Tensor:
        """``log P(rows[i][starts[i]:] | rows[i][:starts[i]])`` for every row (shape ``[len(rows)]``).

        Rows are sorted by where their scored part starts and padded (right) in chunks, so a chunk's logits cover
        few positions: only the positions that are scored get logits (a 262k-token vocabulary, as in Gemma 3, times
        every prompt position would be gigabytes per pass)."""
        order = sorted(range(len(rows)), key=lambda i: (starts[i], len(rows[i])))
        size = self._chunk()
        parts = []
        for c in range(0, len(order), size):
            chunk = order[c : c + size]
            seqs = [rows[i] for i in chunk]
            ids, mask, positions = self._pad(seqs, left=False)
            first = torch.tensor([starts[i] for i in chunk], device=ids.device)
            parts.append(self._checkpointed(self._scored_sum, ids, mask, positions, first))
        out = torch.cat(parts)
        return out[torch.argsort(torch.tensor(order, device=out.device))]

    def _scored_sum(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, first: torch.Tensor
    ) -> torch.Tensor:
        width = ids.shape[1]
        keep = width - int(first.min()) + 1  # logits at position j predict token j + 1
        logits = (
            self.lm(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep, use_cache=False)
            .logits[:, :-1]
            .float()
        )  # predictions for tokens width-keep+1 .. width-1
        targets = ids[:, width - keep + 1 :]
        token_logp = logits.gather(-1, targets[..., None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        columns = torch.arange(width - keep + 1, width, device=ids.device)
        scored = (columns[None, :] >= first[:, None]) & mask[:, width - keep + 1 :].bool()
        return (token_logp * scored).sum(-1)

    # -- fast path ------------------------------------------------------------------------------------------
    def fast_prompt_ids(self, observation: Any) -> list[int]:
        """The token ids the fast path scores ``observation`` with; ``z`` reads the token that follows them."""
        return self._prompt_ids(observation, FAST_QUESTION)

    def fast_scores(self, observations: Sequence[Any]) -> torch.Tensor:
        prompts = [self.fast_prompt_ids(obs) for obs in observations]
        if not prompts:
            return torch.zeros(0, device=self.device)
        size = self._chunk()
        left = self.padding_side == "left"
        order = sorted(
            range(len(prompts)), key=lambda i: len(prompts[i])
        )  # similar lengths share a batch: less padding
        parts = []
        for c in range(0, len(order), size):
            ids, mask, positions = self._pad([prompts[i] for i in order[c : c + size]], left=left)
            parts.append(self._checkpointed(self._yes_no_logits, ids, mask, positions))
        out = torch.cat(parts)
        return out[torch.argsort(torch.tensor(order, device=out.device))]

    def _yes_no_logits(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """``logit(yes) − logit(no)`` after each row's last real token."""
        width = ids.shape[1]
        lengths = mask.sum(-1)
        keep = 1 if self.padding_side == "left" else width - int(lengths.min()) + 1
        logits = self.lm(
            input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep, use_cache=False
        ).logits
        last = logits.shape[1] - 1 if self.padding_side == "left" else None
        rows = torch.arange(ids.shape[0], device=ids.device)
        at = torch.full_like(lengths, last) if last is not None else lengths - 1 - (width - keep)
        picked = logits[rows, at].float()
        return picked[:, self.yes_id] - picked[:, self.no_id]

    # -- slow path ------------------------------------------------------------------------------------------
    def _slow_prompt(self, observation: Any) -> list[int]:
        return self._prompt_ids(observation, SLOW_INSTRUCTION.format(names=", ".join(self.names)))

    def _closes(self, think: list[int]) -> bool:
        return THINK_END in self.tokenizer.decode(think[-_THINK_END_WINDOW:])

    def _sample_thinks(
        self, prompt: list[int], n: int, generator: torch.Generator, greedy: bool
    ) -> tuple[list[list[int]], list[torch.Tensor]]:
        """``n`` reasoning continuations of ``prompt`` from one ``generate`` call, as the sampled token ids, each
        cut after ``</think>`` or before EOS (at most ``max_think_tokens``), and their per-token log-probs.

        generate draws from torch's global RNG; it runs inside ``fork_rng`` seeded from ``generator``, so the same
        generator state gives the same samples (on one device) and the caller's global RNG is untouched."""
        from transformers import GenerationConfig, LogitsProcessorList

        device = self.device
        ids = torch.tensor([prompt], dtype=torch.long, device=device)
        eos = sorted(self.eos_ids)
        settings: dict[str, Any] = {
            "max_new_tokens": self.max_think_tokens,
            "stop_strings": [THINK_END],
            "use_cache": True,
            "eos_token_id": eos or None,
            "pad_token_id": eos[0] if eos else self.pad_id,
        }
        if greedy:  # all n samples are the same: decode once
            settings.update(do_sample=False, num_return_sequences=1)
        else:  # the model's own sampling defaults (top-k, top-p...) would make the log-probs not the policy's
            settings.update(
                do_sample=True,
                num_return_sequences=n,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                typical_p=1.0,
                repetition_penalty=1.0,
                no_repeat_ngram_size=0,
            )
        seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device))
        recorder = _StepLogProbs()
        cuda = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda), torch.no_grad():
            torch.manual_seed(seed)
            out = self.lm.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                cache=self._prompt_cache(ids, settings["num_return_sequences"]),
                generation_config=GenerationConfig(**settings),
                logits_processor=LogitsProcessorList([recorder]),
                tokenizer=self.tokenizer,
            )
        step_logp = recorder.finish(out)
        thinks, logps = [], []
        for row, lp in zip(out[:, len(prompt) :].tolist(), step_logp):
            think: list[int] = []
            for tok in row:
                if tok in self.eos_ids:
                    break
                think.append(tok)
                if self._closes(think):
                    break
            thinks.append(think)
            logps.append(lp[: len(think)].sum())
        if greedy:
            thinks, logps = thinks * n, logps * n
        return thinks, logps

    def _prompt_cache(self, ids: torch.Tensor, rows: int):
        """The KV cache of the prompt (all but its last token) computed once and repeated for the ``rows`` samples:
        ``num_return_sequences`` alone would run the prompt through the model once per sample. generate then
        starts from the prompt's last token (its expansion of the inputs leaves a given cache as it is)."""
        if ids.shape[1] < 2:
            return None
        from transformers import DynamicCache

        cache = DynamicCache(config=self.lm.config)
        self.lm(input_ids=ids[:, :-1], cache=cache, use_cache=True, logits_to_keep=1)
        if rows > 1:
            cache.batch_repeat_interleave(rows)
        return cache

    def _grammar(self, prompt: list[int], think: list[int]) -> list[int]:
        """Prefix up to the NAME choice: prompt + think + the forced ``</think>`` (if missing) + grammar head."""
        closing = [] if self._closes(think) else self._ids(THINK_END)
        return prompt + think + closing + self._ids(GRAMMAR_HEAD)

    def _name_choices(self) -> list[list[int]]:
        return [self._ids(name) for name in self.names]

    def _arg_choices(self, spans: list[str]) -> list[list[int]]:
        return [self._ids(": " + span) for span in spans]

    def _choice_logprobs(self, prefixes: list[list[int]], choices: list[list[int]]) -> torch.Tensor:
        """``[len(prefixes), len(choices)]``: log-softmax over the choices of each choice's sequence log-prob."""
        rows = [p + c for p in prefixes for c in choices]
        starts = [len(p) for p in prefixes for _ in choices]
        return torch.log_softmax(self._row_logprobs(rows, starts).view(len(prefixes), len(choices)), dim=1)

    @staticmethod
    def _draw(logp: torch.Tensor, generator: torch.Generator, greedy: bool) -> int:
        if greedy:
            return int(logp.argmax())
        return int(torch.multinomial(logp.detach().exp().to(generator.device), 1, generator=generator))

    def sample_slow(
        self, observation: Any, n: int, generator: torch.Generator, greedy: bool = False
    ) -> list[SlowSample]:
        with torch.no_grad():
            prompt = self._slow_prompt(observation)
            spans = argument_candidates(observation, self.max_arguments)
            thinks, think_logps = self._sample_thinks(prompt, n, generator, greedy)
            prefixes = [self._grammar(prompt, think) for think in thinks]
            names = self._name_choices()
            name_logp = self._choice_logprobs(prefixes, names)
            picks = [self._draw(name_logp[i], generator, greedy) for i in range(n)]
            options = [self.options[p] if p < len(self.options) else None for p in picks]
            wants = [i for i, o in enumerate(options) if o is not None and o.needs_argument and self.choose_arguments]
            arg_pos = dict.fromkeys(range(n), -1)
            arg_logp = {}
            if wants and spans:
                choices = self._arg_choices(spans)
                table = self._choice_logprobs([prefixes[i] + names[picks[i]] for i in wants], choices)
                for row, i in enumerate(wants):
                    arg_pos[i] = self._draw(table[row], generator, greedy)
                    arg_logp[i] = table[row, arg_pos[i]]
            samples = []
            for i, (think, option) in enumerate(zip(thinks, options)):
                argument = spans[arg_pos[i]] if arg_pos[i] >= 0 else ""
                logp = think_logps[i] + name_logp[i, picks[i]] + arg_logp.get(i, 0.0)
                rationale = self.tokenizer.decode(think).replace(THINK_END, "").strip()
                text = option.render(observation, argument) if option is not None else PASS_NAME
                line = f"{self.names[picks[i]]}" + (f": {argument}" if argument else "")
                samples.append(
                    SlowSample(
                        option,
                        argument,
                        text,
                        rationale,
                        {
                            "think": think,
                            "name_pos": picks[i],
                            "arg_pos": arg_pos[i],
                            "spans": spans,
                            "logp": float(logp),
                            "output": f"<think>{rationale}</think>{GRAMMAR_HEAD}{line}",
                        },
                    )
                )
        return samples

    def slow_logprobs(
        self,
        observation: Any,
        samples: Sequence[SlowSample],
        row_scorer: Callable[[list[list[int]], list[int]], torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``log π(sample)`` from the sampled ids: reasoning tokens + NAME choice + ARGUMENT choice, every sequence
        of the sample set scored in one batched pass (``micro_batch`` chunks with gradients).

        ``row_scorer(rows, starts)`` (default: this model) gives ``log P(row[start:] | row[:start])`` per token-id
        row; another scorer, such as the same adapter behind an inference server, gives the same sample's
        log-probability under that engine (:mod:`agents.steering.served_check`)."""
        if not samples:
            return torch.zeros(0, device=self.device)
        prompt = self._slow_prompt(observation)
        names = self._name_choices()
        rows: list[list[int]] = []
        starts: list[int] = []
        plan = []  # per sample: (think row or None, first name row, first arg row or None, number of args)

        def add(row: list[int], start: int) -> int:
            rows.append(row)
            starts.append(start)
            return len(rows) - 1

        for s in samples:
            think = s.payload["think"]
            think_row = add(prompt + think, len(prompt)) if think else None
            prefix = self._grammar(prompt, think)
            name_row = len(rows)
            for name in names:
                add(prefix + name, len(prefix))
            arg_row, n_args = None, 0
            if s.payload["arg_pos"] >= 0:
                arg_prefix = prefix + names[s.payload["name_pos"]]
                choices = self._arg_choices(s.payload["spans"])
                arg_row, n_args = len(rows), len(choices)
                for c in choices:
                    add(arg_prefix + c, len(arg_prefix))
            plan.append((think_row, name_row, arg_row, n_args))
        scores = (row_scorer or self._row_logprobs)(rows, starts).to(self.device)
        out = []
        for s, (think_row, name_row, arg_row, n_args) in zip(samples, plan):
            lp = torch.log_softmax(scores[name_row : name_row + len(names)], dim=0)[s.payload["name_pos"]]
            if think_row is not None:
                lp = lp + scores[think_row]
            if arg_row is not None:
                lp = lp + torch.log_softmax(scores[arg_row : arg_row + n_args], dim=0)[s.payload["arg_pos"]]
            out.append(lp)
        return torch.stack(out)
