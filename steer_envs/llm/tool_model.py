"""A tiny random causal LM that speaks Qwen2.5's tool-call format, for real ``GRPOTrainer`` steps on CPU, offline.

``steer-envs build-tiny-model PATH`` writes it (no network; about 20 s of CPU, 40 s on a new cache, which it also
fills with the corpus's BM25 index; a copy from the cache afterwards): the README's TRL example trains it
on ``GuidedSearch-v0``, and the TRL tests use the same model. It is a smoke-test model, not a search agent.

Why not the plain tiny model (:mod:`steer_envs.llm.tiny`): a random model never writes a parseable ``<tool_call>``
JSON, so no tool would ever reach the env and every reward of a group would be equal (no gradient). So the model
gets TRL's own Qwen2.5 chat template (TRL recognises it: it parses tool calls and swaps in its training template),
a BPE tokenizer trained on that format, and a few seconds of supervised warm-up on a handful of tool calls per
prompt (:func:`default_cases`: the first train task of ``GuidedSearch-v0`` and one ``SearchSteering-v0`` task): it
then samples a *mix* of calls (different tools, different arguments) at temperature 1, which is what a GRPO group
needs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SteerEnvsError
from ..ids import STEERING_ENV
from ..paths import cache_dir
from .tiny import TINY_SAMPLE

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
#: the steering note of the warm-up's ``intervene`` call (a note that changes the episode: the executor answers)
ANSWER_NOW = "You already have enough evidence. Give your final answer now."
#: the command that writes the model (named by every error about a missing model folder)
BUILD_COMMAND = "steer-envs build-tiny-model"


@dataclass(frozen=True)
class ToolCase:
    """One warm-up prompt: the user message, the tools it is rendered with, and the calls the model learns to
    write after it (``(tool name, arguments)``, sampled about uniformly once warmed up)."""

    prompt: str
    tools: Sequence[Callable[..., Any]]
    calls: tuple[tuple[str, dict[str, Any]], ...]


@dataclass(frozen=True)
class ToolModelTasks:
    """The one-row TRL datasets the default model is warmed up on, and its warm-up cases."""

    guided: Any  # datasets.Dataset: the first train task of GuidedSearch-v0
    steering: Any  # datasets.Dataset: a SearchSteering-v0 task where passing and answering now score differently
    cases: tuple[ToolCase, ...]


def tool_call_text(name: str, arguments: dict) -> str:
    return '<tool_call>\n{"name": "' + name + '", "arguments": ' + json.dumps(arguments) + "}\n</tool_call><|im_end|>"


def _case(cls: type, row: dict, calls: tuple[tuple[str, dict[str, Any]], ...]) -> ToolCase:
    """The prompt GRPOTrainer renders for ``row`` (instruction and first observation) with ``cls``'s tools, sorted by
    name as TRL lists them."""
    probe = cls()
    text = row["prompt"][0]["content"] + probe.reset(**row)
    tools = [getattr(probe, n) for n in sorted(cls.__dict__) if not n.startswith("_") and callable(cls.__dict__[n])]
    return ToolCase(text, tools, calls)


def _steering_row(rows):
    """The first row where passing and answering now lead to different returns (so a GRPO group can differ)."""
    from ..integrations.trl import SearchSteeringTools

    for i in range(len(rows)):
        returns = []
        for first in ("pass", ANSWER_NOW):
            tools = SearchSteeringTools()
            tools.reset(**rows[i])
            tools.pass_turn() if first == "pass" else tools.intervene(first)
            returns.append(tools.get_reward())
        if returns[0] != returns[1]:
            return rows.select([i])
    raise SteerEnvsError(f"no SearchSteering-v0 row of the first {len(rows)} separates passing from answering now")


def default_cases() -> ToolModelTasks:
    """The default model's warm-up: the first train task of ``GuidedSearch-v0`` (answer with the gold answer, a
    wrong one, or search) and a ``SearchSteering-v0`` task (pass, or tell the executor to answer now)."""
    from ..integrations.trl import GuidedSearchTools, SearchSteeringTools, task_dataset

    guided = task_dataset(limit=1)
    gold = GuidedSearchTools().unwrapped.tasks[0].golden_answers[0]
    steering = _steering_row(task_dataset(STEERING_ENV, limit=12))
    cases = (
        _case(
            GuidedSearchTools,
            guided[0],
            (("answer", {"text": gold}), ("answer", {"text": "Paris"}), ("search", {"query": "first nobel prize"})),
        ),
        _case(SearchSteeringTools, steering[0], (("pass_turn", {}), ("intervene", {"note": ANSWER_NOW}))),
    )
    return ToolModelTasks(guided, steering, cases)


def build_tool_model(
    path: str | os.PathLike, cases: Sequence[ToolCase], steps: int = 100, lr: float = 3e-3, seed: int = 0
) -> Path:
    """Write the model and tokenizer to ``path``: warmed up so that after each case's user message, rendered with
    its tools (in TRL's order: sorted by name), it writes one of the case's calls (about uniformly)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template, qwen2_5_training_chat_template

    rendered = [[tool_call_text(n, a) for n, a in case.calls] for case in cases]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1200,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>")
    tokenizer.chat_template = qwen2_5_training_chat_template  # what GRPOTrainer renders prompts with
    sample_prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": case.prompt}], tools=case.tools, tokenize=False, add_generation_prompt=True
        )
        for case in cases
    ]
    bpe.train_from_iterator((TINY_SAMPLE + sample_prompts + sum(rendered, [])) * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>", padding_side="left"
    )
    tokenizer.chat_template = qwen2_5_chat_template

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        pairs = []
        for prompt, calls in zip(sample_prompts, rendered):
            p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            for call in calls:
                c = tokenizer(call, add_special_tokens=False)["input_ids"]
                pairs.append((p, c))
        width = max(len(p) + len(c) for p, c in pairs)
        ids = torch.full((len(pairs), width), tokenizer.pad_token_id)
        labels = torch.full((len(pairs), width), -100)
        mask = torch.zeros((len(pairs), width), dtype=torch.long)
        for i, (p, c) in enumerate(pairs):
            seq = p + c
            ids[i, : len(seq)] = torch.tensor(seq)
            labels[i, len(p) : len(seq)] = torch.tensor(c)
            mask[i, : len(seq)] = 1
        model.train()
        for _ in range(steps):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return Path(path)


def cached_tool_model(cases: Sequence[ToolCase], **kwargs: Any) -> Path:
    """:func:`build_tool_model` once per distinct input, kept under ``$STEER_ENVS_CACHE/tool_models`` (the build is
    deterministic; it takes about 20 s on a free CPU, a minute on 2 busy cores; loading takes a second)."""
    import transformers
    import trl

    key = json.dumps(
        [[c.prompt, [t.__name__ for t in c.tools], [list(call) for call in c.calls]] for c in cases]
        + [sorted(kwargs.items()), transformers.__version__, trl.__version__],
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    root = cache_dir("tool_models")
    final = root / f"tool-qwen2.5-{digest}"
    if not (final / "config.json").exists():
        print(
            f"building the tiny tool-calling model in {final} (offline, once: about 20 s of CPU, 40 s on a new cache)",
            file=sys.stderr,
            flush=True,
        )
        partial = root / f".building-{digest}-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        build_tool_model(partial, cases, **kwargs)
        try:
            partial.rename(final)
        except OSError:  # another process finished first: keep its copy
            shutil.rmtree(partial, ignore_errors=True)
    return final


def build_tiny_tool_model(path: str | os.PathLike) -> Path:
    """Write the default tiny tool-calling model (:func:`default_cases`) to ``path`` (a copy of the cached build)."""
    out = Path(path)
    if out.exists() and any(out.iterdir()):
        if not (out / "config.json").is_file():
            raise SteerEnvsError(f"{out} exists and is not a model folder: give a new or empty folder")
        shutil.rmtree(out)
    shutil.copytree(cached_tool_model(default_cases().cases), out, dirs_exist_ok=True)
    return out


def tiny_tool_model(path: str | os.PathLike) -> str:
    """``path`` as a model folder for ``GRPOTrainer(model=...)``, or a clear error naming the command that builds it
    (transformers would read a missing folder as a Hub id and fail on the network)."""
    if not (Path(path) / "config.json").is_file():
        raise SteerEnvsError(f"no model in {path}: build it with `{BUILD_COMMAND} {path}` (offline, about 20 s of CPU)")
    return str(path)
