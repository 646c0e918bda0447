"""The LLM steerer's two paths, batched vs one at a time (pytest-benchmark; run through
``python -m perf.suite``).

Models: random-initialised Qwen2-architecture causal LMs built from a config, with the tiny BPE tokenizer's
vocabulary, on CPU: ``tiny`` (hidden 64, 2 layers: the acceptance model, whose forward pass costs what a
large model's costs on a GPU at small batch, i.e. mostly per-call overhead) and ``small`` (hidden 256, 4 layers,
4 heads / 2 KV heads: compute-bound on a CPU core, where batching saves no arithmetic). Observations: 32 states of
pass rollouts of ``sim:default`` (dev split), every turn, as a state bank holds them.

* fast path: :meth:`CausalLMSteerer.fast_scores` on the 32 observations (padded batches of ``batch_size``) vs
  the one-forward-per-observation loop the steerer had before (copied below); equal z asserted;
* slow path: G = 8 reasoning samples of one observation through ``generate`` (one call,
  ``num_return_sequences=8``, the prompt's KV cache computed once) vs 8 runs of the token-at-a-time loop the
  steerer had before (``_sample_think``, copied below verbatim).

Both ratios are measured side by side in one run; the reference runs first, then the new path. Each runs with
1 torch thread (what the trainers set on CPU) and with 2: on a loaded 2-core machine two threads per call contend
with other work, which penalises many small calls far more than a few large ones, so read the 1-thread rows as
the batching effect and the 2-thread rows as what contention adds.
"""

from __future__ import annotations

import time

import pytest
import torch

from agents.steering.causal_lm import FAST_QUESTION, THINK_END, CausalLMSteerer
from agents.steering.interventions import options_from_catalogue
from steer_envs.envs.catalogue import STEERING
from steer_envs.ids import STEERING_ENV

G = 8
OBSERVATIONS = 32
THINK_TOKENS = 32
MODELS = {
    "tiny": {"hidden_size": 64, "layers": 2, "heads": 4, "kv_heads": 2},
    "small": {"hidden_size": 256, "layers": 4, "heads": 4, "kv_heads": 2},
}
#: (model, torch threads) rows: every model at 1 thread (what the trainers set on CPU), the small one at 2 too
SETTINGS = [("tiny", 1), ("small", 1), ("small", 2)]
SETTING_IDS = [f"{model}-{threads}-thread" for model, threads in SETTINGS]
#: the speed-ups each path must reach, on the model whose forward pass is mostly per-call overhead
TARGETS = {"fast": 4.0, "slow": 3.0}
TARGET_MODEL = "tiny"

_STEERERS: dict[str, CausalLMSteerer] = {}


@pytest.fixture(scope="module")
def steerers(tmp_path_factory):
    """Builds each model once for the module (on first use)."""
    from steer_envs.llm.qwen_shaped import build_random_qwen2

    def get(name: str) -> CausalLMSteerer:
        if name not in _STEERERS:
            folder = build_random_qwen2(tmp_path_factory.mktemp(f"qwen-{name}") / "lm", **MODELS[name])
            _STEERERS[name] = CausalLMSteerer(
                options_from_catalogue(STEERING), model=str(folder), max_think_tokens=THINK_TOKENS, batch_size=16
            )
        return _STEERERS[name]

    yield get
    _STEERERS.clear()


@pytest.fixture(scope="module")
def observations():
    import gymnasium as gym

    import steer_envs  # noqa: F401 - registers the env ids

    env = gym.make(STEERING_ENV, split="dev", action_mode="discrete")
    out, seed = [], 0
    while len(out) < OBSERVATIONS:
        obs, _ = env.reset(seed=seed)
        seed += 1
        done = False
        while not done and len(out) < OBSERVATIONS:
            out.append(obs)
            obs, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    env.close()
    return out


# -- the reference: the steerer's paths before the batched rewrite, copied (self -> st) --------------------------
def old_fast_scores(st, observations):
    """``CausalLMSteerer.fast_scores`` before batching (no-gradient branch): one forward pass per observation."""
    zs = []
    for obs in observations:
        ids = torch.tensor([st._prompt_ids(obs, FAST_QUESTION)])
        logits = st.lm(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
        zs.append(logits[st.yes_id] - logits[st.no_id])
    return torch.stack(zs)


def old_sample_think(st, prompt, generator, greedy):
    """``CausalLMSteerer._sample_think`` before generate, verbatim: one token per forward pass, batch 1."""
    ids = torch.tensor([prompt])
    out = st.lm(input_ids=ids, use_cache=True, logits_to_keep=1)
    past, logits = out.past_key_values, out.logits[0, -1].float()
    think: list[int] = []
    eos = st.tokenizer.eos_token_id
    for _ in range(st.max_think_tokens):
        probs = torch.softmax(logits, dim=-1)
        tok = int(probs.argmax()) if greedy else int(torch.multinomial(probs, 1, generator=generator))
        if tok == eos:
            break
        think.append(tok)
        if THINK_END in st.tokenizer.decode(think[-4:]):
            break
        out = st.lm(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
        past, logits = out.past_key_values, out.logits[0, -1].float()
    return think


def _timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


@pytest.fixture
def setting(request, steerers):
    """``(steerer, threads)`` of one row, with torch's thread count set for the test and restored after."""
    model, threads = request.param
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    yield steerers(model), model
    torch.set_num_threads(before)


@pytest.mark.parametrize("setting", SETTINGS, indirect=True, ids=SETTING_IDS)
def test_fast_path_batched_vs_one_at_a_time(benchmark, setting, observations):
    """32 observations: one forward each (before) vs padded batches of 16 (now); the same z asserted."""
    steerer, model = setting
    with torch.no_grad():
        steerer.fast_scores(observations[:2])  # warm-up
        old_fast_scores(steerer, observations[:2])
        old, old_s = _timed(old_fast_scores, steerer, observations)
        start = time.perf_counter()
        new = benchmark.pedantic(steerer.fast_scores, args=(observations,), rounds=1, iterations=1)
        new_s = time.perf_counter() - start
    assert float((new - old).abs().max()) <= 1e-4
    lengths = [len(steerer._prompt_ids(o, FAST_QUESTION)) for o in observations]
    benchmark.extra_info.update(
        {
            "observations": len(observations),
            "batch_size": steerer.batch_size,
            "prompt_tokens_mean": sum(lengths) / len(lengths),
            "prompt_tokens_max": max(lengths),
            "one_at_a_time_s": old_s,
            "batched_s": new_s,
            "one_at_a_time_obs_per_s": len(observations) / old_s,
            "batched_obs_per_s": len(observations) / new_s,
            "speedup": old_s / new_s,
            "threads": torch.get_num_threads(),
            "model": model,
            **MODELS[model],
            "target_speedup": TARGETS["fast"],
            "target_model": TARGET_MODEL,
        }
    )


@pytest.mark.parametrize("setting", SETTINGS, indirect=True, ids=SETTING_IDS)
def test_slow_path_generate_vs_token_loop(benchmark, setting, observations):
    """G = 8 reasoning samples of one observation: 8 token loops (before) vs one generate call (now)."""
    steerer, model = setting
    obs = observations[-1]
    prompt = steerer._slow_prompt(obs)
    with torch.no_grad():
        old_sample_think(steerer, prompt, torch.Generator().manual_seed(0), False)  # warm-up
        steerer._sample_thinks(prompt, 2, torch.Generator().manual_seed(0), False)
        gen = torch.Generator().manual_seed(1)
        old, old_s = _timed(lambda: [old_sample_think(steerer, prompt, gen, False) for _ in range(G)])
        start = time.perf_counter()
        new, logps = benchmark.pedantic(
            steerer._sample_thinks, args=(prompt, G, torch.Generator().manual_seed(1), False), rounds=1, iterations=1
        )
        new_s = time.perf_counter() - start
    assert len(new) == G and all(0 < len(t) <= THINK_TOKENS for t in new)
    assert all(torch.isfinite(lp) for lp in logps)
    old_tokens, new_tokens = sum(map(len, old)), sum(map(len, new))
    benchmark.extra_info.update(
        {
            "G": G,
            "max_think_tokens": THINK_TOKENS,
            "prompt_tokens": len(prompt),
            "token_loop_s": old_s,
            "generate_s": new_s,
            "token_loop_tokens": old_tokens,
            "generate_tokens": new_tokens,
            "token_loop_tokens_per_s": old_tokens / old_s,
            "generate_tokens_per_s": new_tokens / new_s,
            "speedup": old_s / new_s,
            "tokens_per_s_speedup": (new_tokens / new_s) / (old_tokens / old_s),
            "threads": torch.get_num_threads(),
            "model": model,
            **MODELS[model],
            "target_speedup": TARGETS["slow"],
            "target_model": TARGET_MODEL,
        }
    )
