"""A tiny random causal LM that speaks Qwen2.5's tool-call format, for real ``GRPOTrainer`` steps on CPU.

Why not the plain tiny model: a random model never writes a parseable ``<tool_call>`` JSON, so no tool would ever
reach the env and every reward of a group would be equal (no gradient). So the model gets TRL's own Qwen2.5 chat
template (TRL recognises it: it parses tool calls and swaps in its training template), a BPE tokenizer trained on
that format, and a few seconds of supervised warm-up on a handful of tool calls per prompt: it then samples a
*mix* of calls (different tools, different arguments) at temperature 1, which is what a GRPO group needs.
"""
from __future__ import annotations

import json
import hashlib
import os
import shutil
from pathlib import Path

from steer_envs.llm.tiny import TINY_SAMPLE

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]


def tool_call_text(name: str, arguments: dict) -> str:
    return '<tool_call>\n{"name": "' + name + '", "arguments": ' + json.dumps(arguments) + "}\n</tool_call><|im_end|>"


def build_tool_model(path: Path, cases: list[tuple[str, list, list[tuple[str, dict]]]], steps: int = 100,
                     lr: float = 3e-3, seed: int = 0) -> Path:
    """Write the model and tokenizer to ``path``: warmed up so that after each case's user message, rendered with
    its tools (in TRL's order: sorted by name), it writes one of the case's calls (about uniformly)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template, qwen2_5_training_chat_template

    rendered = [[tool_call_text(n, a) for n, a in calls] for _, _, calls in cases]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>")
    tokenizer.chat_template = qwen2_5_training_chat_template  # what GRPOTrainer renders prompts with
    sample_prompts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tools=tools, tokenize=False,
                                                    add_generation_prompt=True) for p, tools, _ in cases]
    bpe.train_from_iterator((TINY_SAMPLE + sample_prompts + sum(rendered, [])) * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>",
                                        padding_side="left")
    tokenizer.chat_template = qwen2_5_chat_template

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.eos_token_id, tie_word_embeddings=True)
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
            labels[i, len(p): len(seq)] = torch.tensor(c)
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


def cached_tool_model(cases: list[tuple[str, list, list[tuple[str, dict]]]], **kwargs) -> Path:
    """:func:`build_tool_model` once per distinct input, kept under ``$STEER_ENVS_CACHE/test_models`` (the build is
    deterministic; it takes about a minute on 2 busy cores, loading takes a second)."""
    import transformers
    import trl

    key = json.dumps([[p, [t.__name__ for t in tools], calls] for p, tools, calls in cases] +
                     [sorted(kwargs.items()), transformers.__version__, trl.__version__], sort_keys=True, default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    root = Path(os.environ.get("STEER_ENVS_CACHE") or Path.home() / ".cache" / "steer_envs") / "test_models"
    final = root / f"tool-qwen2.5-{digest}"
    if not (final / "config.json").exists():
        partial = root / f".building-{digest}-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        build_tool_model(partial, cases, **kwargs)
        try:
            partial.rename(final)
        except OSError:  # another process finished first: keep its copy
            shutil.rmtree(partial, ignore_errors=True)
    return final
