"""A random-initialised Qwen2-architecture causal LM of a chosen size, built offline (tests, benchmarks, GPU checks).

:func:`steer_envs.llm.tiny.build_tiny_causal_lm` is a 64-wide Llama for fast tests; the papers' steerers and
learners are Qwen models, whose attention has biased q/k/v projections and grouped key/value heads. This builds
that architecture at any width and depth from a config alone (nothing downloaded) with the tiny model's BPE
tokenizer, so the same loading, batching and sampling code runs on a Qwen-shaped model of a realistic size.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def build_random_qwen2(
    path: str | os.PathLike,
    hidden_size: int = 256,
    layers: int = 4,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate_size: int | None = None,
    max_positions: int = 4096,
    seed: int = 0,
    dtype: str = "float32",
    device: str = "cpu",
) -> Path:
    """Write a random Qwen2ForCausalLM and the tiny BPE tokenizer to ``path``; return the folder.

    Deterministic for a given ``seed`` (on one device). Loads with ``make_backend(f"hf:{path}")`` like any other
    folder. ``device="cuda"`` initialises the weights on the GPU (an 8B model in seconds rather than minutes on
    CPU) and ``dtype="bfloat16"`` writes half the bytes; the GPU check uses both.
    """
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from .tiny import build_tiny_causal_lm

    if hidden_size % heads or heads % kv_heads:
        raise ValueError(
            f"hidden_size ({hidden_size}) must be a multiple of heads ({heads}) and heads a multiple of kv_heads "
            f"({kv_heads}); e.g. hidden_size=256, heads=4, kv_heads=2"
        )
    out = Path(path)
    with tempfile.TemporaryDirectory() as tmp:  # only its tokenizer is kept
        tokenizer = AutoTokenizer.from_pretrained(build_tiny_causal_lm(Path(tmp) / "tok"))
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 4 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed)
        if device != "cpu":
            torch.cuda.manual_seed_all(seed)
        model = Qwen2ForCausalLM(config).to(getattr(torch, dtype))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
