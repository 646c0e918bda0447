"""A tiny random causal LM, built offline in about a second, for fast tests of every LLM code path.

Its weights are random (its text is gibberish), but it is a real transformers model with a real BPE tokenizer,
saved with ``save_pretrained``: the same loading, batching, stop-sequence, log-prob, gradient and HTTP code runs
on it as on Gemma or a served 7B model. The tokenizer is trained on a small built-in sample that includes the
Search-R1 protocol tags, so ``<search>``, ``</answer>``, ``yes`` and ``no`` are short token sequences.
"""

from __future__ import annotations

import os
from pathlib import Path

TINY_SAMPLE = [
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. You can call a search engine by <search> query </search> and it will return the top "
    "searched results between <information> and </information>. Provide the answer inside <answer> and </answer>.",
    "<think> I need to find who wrote the novel. </think> <search> author of the novel </search>",
    "<information>Doc 1(Title: Paris) Paris is the capital and most populous city of France.</information>",
    "<answer> Paris </answer> <answer> Beijing </answer> <answer> yes </answer> <answer> no </answer>",
    "<guidance> Search for the second entity before answering. </guidance>",
    "Question: Who was president of the United States in the year that Citibank was founded? Answer: James Madison",
    "Should the supervisor intervene now? Answer yes or no. yes no yes no Yes No",
    "The quick brown fox jumps over the lazy dog. A river flows through the old town near the mountains.",
    "In 1905 the physicist published four papers on the photoelectric effect, Brownian motion and relativity.",
    "The film was directed by a director born in London, and its music was composed by an Italian composer.",
    "0 1 2 3 4 5 6 7 8 9 10 100 1000 1999 2001 2020 January February March April May June July",
]
SPECIAL_TOKENS = ["<|endoftext|>", "<|pad|>"]
#: a minimal chat template (role headers, then the content), so chat-mode code paths (an inference server's
#: ``continue_final_message``, ``apply_chat_template``) can run on the tiny model
TINY_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] }}"
    "{% if not (loop.last and message['role'] == 'assistant') %}{{ '\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def build_tiny_causal_lm(
    path: str | os.PathLike,
    vocab_size: int = 600,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    max_positions: int = 4096,
    seed: int = 0,
    chat_template: bool = False,
) -> Path:
    """Write a tiny Llama-architecture model and its tokenizer to ``path`` and return the folder.

    The attention head size is ``hidden_size // heads`` (16 by default: fast on CPU); an inference engine's CPU
    kernels may need more (vLLM's need at least 32: e.g. ``hidden_size=128, heads=2``). ``chat_template`` gives
    the tokenizer :data:`TINY_CHAT_TEMPLATE`. Deterministic for a given ``seed``. Loads with
    ``AutoModelForCausalLM.from_pretrained(path)`` and ``AutoTokenizer.from_pretrained(path)``, or
    ``make_backend(f"hf:{path}")``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(TINY_SAMPLE * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>", pad_token="<|pad|>"
    )
    if chat_template:
        tokenizer.chat_template = TINY_CHAT_TEMPLATE

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
