"""The transformers backend: a causal LM from a local folder (``hf:<path>``) or a packaged model (``hf:gemma-3-270m``).

Besides the :class:`~steer_envs.llm.base.LLMBackend` protocol it exposes the torch ``model`` and ``tokenizer`` and
:meth:`HFBackend.continuation_logprobs` (log-probs of given continuations, with gradients), because trainers
(the steering agent, ACTGUIDE-RL) fine-tune the same model they sample from. It never downloads anything: the
argument must be a folder on disk, or a model shipped as a pip package (see :mod:`steer_envs.llm.packaged`).

**Context.** :attr:`HFBackend.context_length` is the model's own limit (``max_position_embeddings`` in its config, or
the tokenizer's ``model_max_length`` when that is a real number), capped by the ``max_context`` option. A prompt
whose tokens plus the tokens asked for exceed it raises :class:`~steer_envs.llm.base.ContextOverflowError` instead
of being cut. Raising rather than clamping ``max_new_tokens`` or dropping the prompt's start (what this backend
once did silently: the task's instructions went first) is vLLM's rule too, so an ``hf:`` executor and the same
model served by vLLM end an over-long episode at the same turn, as the same scored truncation.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from ..errors import SteerEnvsError
from .base import (
    BackendStats,
    ContextOverflowError,
    FinishReason,
    Generation,
    GenerationConfig,
    check_prompts,
    logsumexp,
    truncate_at_stop,
)
from .offline import LOCAL_LOAD

#: how many tokens back the stop-string check decodes (stop strings are short)
_STOP_WINDOW = 24
#: a tokenizer's ``model_max_length`` above this is transformers' "unset" placeholder (1e30), not a real limit
_SANE_MAX_LENGTH = 10_000_000


def model_context_length(config: Any, tokenizer: Any = None) -> int | None:
    """The context a model was built for: ``max_position_embeddings`` of its config (or of its ``text_config``, as
    multimodal configs nest it), else the tokenizer's ``model_max_length`` when it is a real number; None if
    neither says."""
    for source in (config, getattr(config, "text_config", None)):
        value = getattr(source, "max_position_embeddings", None) if source is not None else None
        if isinstance(value, int) and value > 0:
            return value
    value = getattr(tokenizer, "model_max_length", None)
    if isinstance(value, int) and 0 < value < _SANE_MAX_LENGTH:
        return value
    return None


def _stop_criteria(tokenizer: Any, stops: Sequence[str], prompt_len: int):
    """A stopping criterion that ends each row once its generated text contains a stop string."""
    import torch
    from transformers import StoppingCriteria

    class StopOnStrings(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):  # noqa: ARG002 - transformers' signature
            done = []
            for row in input_ids:
                tail = row[max(prompt_len, row.shape[0] - _STOP_WINDOW) :]
                text = tokenizer.decode(tail, skip_special_tokens=True)
                done.append(any(s in text for s in stops))
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StopOnStrings()


@dataclass(frozen=True)
class SampledGeneration:
    """One sampled continuation with the ids that produced it (:meth:`HFBackend.generate_with_ids`).

    ``prompt_ids``: the prompt as the model read it (after truncation, without padding). ``token_ids``: the sampled
    tokens up to and including the one that completed the stop string, or the end-of-sequence token the model
    chose (``generation.text`` is their decoded text cut at the stop). A trainer scores these ids, not a
    re-tokenisation of the text, which can differ (BPE merges across the cut, special tokens, a stop string that
    ends inside a token)."""

    generation: Generation
    prompt_ids: list[int]
    token_ids: list[int]


def forked_cuda_devices(device: Any) -> list[int]:
    """The CUDA devices whose RNG a seeded ``generate`` on ``device`` draws from: ``fork_rng`` must save and restore
    them too, or the seed replaces the caller's CUDA RNG state for good (``[]`` for a CPU model)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return []
    return [device.index if device.index is not None else torch.cuda.current_device()]


class HFBackend:
    """A transformers causal LM on CPU (or ``device``). Thread-safe: calls are serialised by a lock."""

    def __init__(
        self,
        path: str | os.PathLike,
        name: str | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        max_batch: int = 8,
        max_context: int = 8192,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(path).expanduser()
        if not (folder / "config.json").is_file():
            raise SteerEnvsError(
                f"hf:{path}: {str(folder)!r} is not a model folder (no config.json). hf: takes a local folder written "
                "by save_pretrained, or a packaged model name such as hf:gemma-3-270m; nothing is downloaded"
            )
        self.name = name or f"hf:{path}"
        self.path = folder
        self.device = device
        self.max_batch = max_batch
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype), **LOCAL_LOAD).to(device)
        self.model.eval()
        self.tokenizer.padding_side = "left"
        self.tokenizer.truncation_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        limit = model_context_length(self.model.config, self.tokenizer)
        #: the tokens a prompt and its generation may take together (the ``max_context`` option caps the model's)
        self.max_context = min(int(limit), max_context) if limit else max_context
        self.stats = BackendStats()
        self._keeps_logits = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        self.lock = threading.RLock()
        self._eos_ids = self._collect_eos_ids()

    # -- helpers -----------------------------------------------------------------------------------------
    def _collect_eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for source in (getattr(self.model, "generation_config", None), self.model.config):
            value = getattr(source, "eos_token_id", None) if source is not None else None
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(int(v) for v in value)
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        return ids

    @property
    def context_length(self) -> int:
        """Tokens a prompt and its generated tokens may take together (see the module docstring)."""
        return self.max_context

    def count_prompt_tokens(self, prompt: str) -> int:
        """The prompt's tokens as :meth:`generate` feeds them (special tokens included)."""
        return len(self.tokenizer(prompt)["input_ids"])

    def _check_fits(self, lengths: Sequence[int], room: int) -> None:
        """Raise :class:`ContextOverflowError` when a prompt of ``lengths`` tokens and ``room`` more exceed the
        context. Why raise rather than clamp: see the module docstring."""
        longest = max(lengths, default=0)
        if longest + room > self.max_context:
            raise ContextOverflowError(
                f"{self.name}: this model's maximum context length is {self.max_context} tokens, but the prompt has "
                f"{longest} tokens and {room} more were asked for ({longest} + {room} > {self.max_context}); shorten "
                "the prompt or ask for fewer tokens (an executor's episode ends here as a scored truncation)",
                prompt_tokens=longest,
                max_new_tokens=room,
                context_length=self.max_context,
            )

    def _encode(self, prompts: Sequence[str], room: int):
        enc = self.tokenizer(list(prompts), return_tensors="pt", padding=True)
        self._check_fits(enc["attention_mask"].sum(-1).tolist(), room)
        return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}

    def encode_prompts(self, prompts: Sequence[str], room: int) -> list[list[int]]:
        """Token ids of each prompt exactly as :meth:`generate` feeds them with ``max_new_tokens=room`` (special
        tokens added; a prompt that leaves less than ``room`` raises :class:`ContextOverflowError`, as
        :meth:`generate` does), without padding: the ids to score a sampled continuation after
        (:meth:`token_logprobs`)."""
        items = check_prompts(prompts)
        ids = [list(row) for row in self.tokenizer(items)["input_ids"]]
        self._check_fits([len(row) for row in ids], room)
        return ids

    @staticmethod
    def _positions(attention_mask):
        return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)

    def _last_logprobs(self, prompts: Sequence[str]):
        """Next-token log-probabilities after each prompt, shape [batch, vocab]."""
        import torch

        enc = self._encode(prompts, room=1)
        with torch.no_grad():
            out = self.model(**enc, position_ids=self._positions(enc["attention_mask"]))
        return torch.log_softmax(out.logits[:, -1, :].float(), dim=-1)

    def _batches(self, items: list[str]):
        for i in range(0, len(items), self.max_batch):
            yield items[i : i + self.max_batch]

    # -- protocol ----------------------------------------------------------------------------------------
    def generate(self, prompts: Sequence[str], config: GenerationConfig) -> list[Generation]:
        items = check_prompts(prompts)
        results: list[Generation] = []
        with self.lock:
            for batch in self._batches(items):
                results.extend(self._generate_batch(batch, config))
        self.stats.calls += 1
        self.stats.prompts += len(items)
        self.stats.generated_tokens += sum(g.tokens for g in results)
        return results

    def generate_with_ids(self, prompts: Sequence[str], config: GenerationConfig) -> list[SampledGeneration]:
        """:meth:`generate`, keeping each continuation's prompt ids and sampled token ids (see
        :class:`SampledGeneration`): what an RL trainer needs to score exactly the tokens it sampled."""
        items = check_prompts(prompts)
        results: list[SampledGeneration] = []
        with self.lock:
            for batch in self._batches(items):
                results.extend(self._sample_batch(batch, config))
        self.stats.calls += 1
        self.stats.prompts += len(items)
        self.stats.generated_tokens += sum(r.generation.tokens for r in results)
        return results

    def _generate_batch(self, prompts: list[str], config: GenerationConfig) -> list[Generation]:
        return [r.generation for r in self._sample_batch(prompts, config)]

    def _stop_cut(self, row: list[int], stops: Sequence[str]) -> int:
        """The fewest leading tokens of ``row`` whose text already contains a stop string (binary search: once a
        prefix's text holds one, every longer prefix's does)."""

        def has_stop(k: int) -> bool:
            text = self.tokenizer.decode(row[:k], skip_special_tokens=True)
            return any(s and s in text for s in stops)

        lo, hi = 1, len(row)
        while lo < hi:
            mid = (lo + hi) // 2
            if has_stop(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _sample_batch(self, prompts: list[str], config: GenerationConfig) -> list[SampledGeneration]:
        import torch
        from transformers import GenerationConfig as HFGenerationConfig
        from transformers import StoppingCriteriaList

        enc = self._encode(prompts, room=config.max_new_tokens)
        prompt_len = enc["input_ids"].shape[1]
        settings: dict[str, Any] = {
            "max_new_tokens": config.max_new_tokens,
            "do_sample": not config.greedy,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": sorted(self._eos_ids) or None,
        }
        if not config.greedy:
            settings.update(temperature=config.temperature, top_p=config.top_p, top_k=0)
        criteria = StoppingCriteriaList(
            [_stop_criteria(self.tokenizer, config.stop, prompt_len)] if config.stop else []
        )
        with torch.random.fork_rng(devices=forked_cuda_devices(self.model.device)), torch.no_grad():
            if config.seed is not None:
                torch.manual_seed(config.seed)
            out = self.model.generate(
                **enc, generation_config=HFGenerationConfig(**settings), stopping_criteria=criteria
            )
        ends = self._eos_ids | {self.tokenizer.pad_token_id}
        gens = []
        mask = enc["attention_mask"].bool()
        for r, row in enumerate(out[:, prompt_len:].tolist()):
            n = next((i for i, t in enumerate(row) if t in ends), len(row))
            ended_by_eos = n < len(row)
            # one sequence of ids decodes to one str (transformers types decode for batches too)
            text = cast(str, self.tokenizer.decode(row[:n], skip_special_tokens=True))
            text, stop = truncate_at_stop(text, config.stop)
            reason: FinishReason = "stop" if (stop is not None or ended_by_eos) else "length"
            # the sampled ids: through the token that completed the stop, else through the end token the model chose
            cut = self._stop_cut(row[:n], config.stop) if stop is not None else min(n + 1, len(row))
            gens.append(
                SampledGeneration(
                    Generation(text=text, tokens=n, finish_reason=reason, stop_sequence=stop),
                    enc["input_ids"][r][mask[r]].tolist(),
                    row[:cut],
                )
            )
        return gens

    def _candidate_ids(self, candidate: str) -> list[int]:
        """Token ids that spell the candidate alone, with or without a leading space (a remote server's
        top-k table is matched the same way). If neither spelling is one token, the first token of the
        spaced spelling stands in (an upper bound)."""
        spellings = [
            self.tokenizer.encode(v, add_special_tokens=False) for v in (candidate.strip(), " " + candidate.strip())
        ]
        single = sorted({ids[0] for ids in spellings if len(ids) == 1})
        if single:
            return single
        return [spellings[1][0]] if spellings[1] else []

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> list[dict[str, float]]:
        """Log-prob that the next token is each candidate, with or without a leading space (summed).

        Candidates should be single tokens (``yes`` / ``no``); for a longer one its first token is scored,
        an upper bound on the whole string's probability (use :meth:`continuation_logprobs` for exact scores).
        """
        items = check_prompts(prompts)
        if not candidates:
            raise SteerEnvsError("next_token_logprobs needs at least one candidate string, e.g. ['yes', 'no']")
        ids = {c: self._candidate_ids(c) for c in candidates}
        empty = [c for c, v in ids.items() if not v]
        if empty:
            raise SteerEnvsError(f"candidate(s) {empty!r} are empty after tokenisation; give non-blank strings")
        out: list[dict[str, float]] = []
        with self.lock:
            for batch in self._batches(items):
                logp = self._last_logprobs(batch)
                for row in logp:
                    out.append({c: logsumexp([float(row[i]) for i in v]) for c, v in ids.items()})
        self.stats.calls += 1
        self.stats.prompts += len(items)
        return out

    def top_logprobs(self, prompts: Sequence[str], k: int) -> list[dict[str, float]]:
        import torch

        items = check_prompts(prompts)
        out: list[dict[str, float]] = []
        with self.lock:
            for batch in self._batches(items):
                logp = self._last_logprobs(batch)
                values, indices = torch.topk(logp, k=min(k, logp.shape[-1]), dim=-1)
                for vals, idx in zip(values.tolist(), indices.tolist()):
                    table: dict[str, list[float]] = {}
                    for v, i in zip(vals, idx):
                        table.setdefault(cast(str, self.tokenizer.decode([i])), []).append(v)
                    out.append({tok: logsumexp(vs) for tok, vs in table.items()})
        return out

    # -- extras for trainers and servers ------------------------------------------------------------------
    def continuation_logprobs(
        self,
        prompts: Sequence[str],
        continuations: Sequence[str],
        reduce: Literal["sum", "mean", "none"] = "sum",
        grad: bool = True,
    ):
        """Log-probabilities of ``continuations[i]`` after ``prompts[i]``, differentiable w.r.t. the model.

        Prompt and continuation are tokenised separately (the continuation without special tokens), as a
        sampled action would be. ``reduce="sum"``/``"mean"`` gives a tensor of shape [batch];
        ``"none"`` a list of 1-D tensors of per-token log-probs. Not serialised by the lock: the caller owns
        the model while training.
        """
        import torch

        items, conts = check_prompts(prompts), check_prompts(continuations)
        if len(items) != len(conts):
            raise SteerEnvsError(f"got {len(items)} prompts but {len(conts)} continuations; pass one per prompt")
        p_ids = [self.tokenizer.encode(p, add_special_tokens=True) for p in items]
        c_ids = [self.tokenizer.encode(c, add_special_tokens=False) for c in conts]
        if not all(c_ids):
            raise SteerEnvsError("a continuation is empty; continuation_logprobs scores at least one token")
        per_item = self.token_logprobs(p_ids, c_ids, grad=grad, micro_batch=max(1, len(items)))
        if reduce == "none":
            return per_item
        if reduce == "mean":
            return torch.stack([t.mean() for t in per_item])
        return torch.stack([t.sum() for t in per_item])

    def token_logprobs(
        self,
        prompt_ids: Sequence[Sequence[int]],
        response_ids: Sequence[Sequence[int]],
        grad: bool = True,
        micro_batch: int | None = None,
    ):
        """Per-token log-probs (fp32, on the model's device) of ``response_ids[i]`` after ``prompt_ids[i]``.

        Ids rather than text, so a sampled response is scored as it was sampled (see :class:`SampledGeneration`).
        Sequences go through the model ``micro_batch`` at a time (default ``max_batch``), right-padded; with
        ``grad=True`` every micro-batch keeps its graph for the caller's backward. Returns a list of 1-D tensors,
        one per response. Not serialised by the lock: the caller owns the model while training.
        """
        if len(prompt_ids) != len(response_ids):
            raise SteerEnvsError(
                f"got {len(prompt_ids)} prompts but {len(response_ids)} responses; pass one per prompt"
            )
        for what, seqs in (("prompt", prompt_ids), ("response", response_ids)):
            if any(len(s) == 0 for s in seqs):
                raise SteerEnvsError(
                    f"token_logprobs got an empty {what}; every {what} needs at least one token id "
                    "(a response is scored after its prompt's last token)"
                )
        step = int(micro_batch or self.max_batch)
        if step < 1:
            raise SteerEnvsError(f"micro_batch must be a positive number of sequences, got {micro_batch}")
        out = []
        for i in range(0, len(prompt_ids), step):
            out.extend(self._score_ids(prompt_ids[i : i + step], response_ids[i : i + step], grad))
        return out

    def _score_ids(self, prompt_ids, response_ids, grad: bool):
        import contextlib

        import torch

        device = self.model.device
        pad = self.tokenizer.pad_token_id
        seqs = [[int(t) for t in p] + [int(t) for t in c] for p, c in zip(prompt_ids, response_ids)]
        spans = [(len(p), len(c)) for p, c in zip(prompt_ids, response_ids)]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):  # right padding: positions are then plain 0..n-1
            ids[r, : len(s)] = torch.tensor(s)
            mask[r, : len(s)] = 1
        ids, mask = ids.to(device), mask.to(device)
        ctx = contextlib.nullcontext() if grad else torch.no_grad()
        with ctx:
            # only the positions that predict a response token need logits: with a 262k-token vocabulary the
            # prompt's logits would be most of a training step's memory
            keep = width - (min(start for start, _ in spans) - 1)
            kwargs = {"logits_to_keep": keep} if self._keeps_logits else {}
            logits = self.model(input_ids=ids, attention_mask=mask, **kwargs).logits
            offset = width - logits.shape[1]
            per_item = []
            for r, (start, n) in enumerate(spans):
                rows = logits[r, start - 1 - offset : start - 1 - offset + n].float()
                targets = ids[r, start : start + n]
                per_item.append(rows.gather(-1, targets[:, None]).squeeze(-1) - torch.logsumexp(rows, dim=-1))
        return per_item

    def render_chat(self, messages: Sequence[dict[str, str]], continue_final_message: bool = False) -> str:
        """Turn chat messages into one prompt: the tokenizer's chat template when it has one.

        The template ends with the generation prompt (a new assistant turn), or with ``continue_final_message``
        leaves the last message (an assistant's unfinished turn) open for the model to continue, as vLLM's
        ``continue_final_message`` does. Without a template the contents are joined (the last one then continues).
        """
        if getattr(self.tokenizer, "chat_template", None):
            # one conversation, not tokenized: one str (transformers types the call for batches and ids too)
            return cast(
                str,
                self.tokenizer.apply_chat_template(
                    list(messages),
                    tokenize=False,
                    add_generation_prompt=not continue_final_message,
                    continue_final_message=continue_final_message,
                ),
            )
        return "\n\n".join(m.get("content", "") for m in messages)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))


HF_OPTIONS = frozenset({"device", "dtype", "max_batch", "max_context"})


def load_hf_backend(arg: str, **options: Any) -> HFBackend:
    """``hf:<arg>``: a packaged model name (``gemma-3-270m``) or a local folder."""
    from .packaged import PACKAGED_MODELS, packaged_model_dir

    unknown = sorted(set(options) - HF_OPTIONS)
    if unknown:
        raise SteerEnvsError(f"unknown hf backend option(s) {unknown}; valid: {', '.join(sorted(HF_OPTIONS))}")
    if arg in PACKAGED_MODELS:
        return HFBackend(packaged_model_dir(arg), name=f"hf:{arg}", **options)
    if not arg:
        raise SteerEnvsError(
            f"hf: needs a model folder or a packaged name, e.g. hf:/path/to/model or hf:{next(iter(PACKAGED_MODELS))}"
        )
    return HFBackend(arg, **options)
