"""The transformers backend on the tiny random model: batching, stops, sampling seeds, log-probs, gradients."""

import math
import os

import pytest
import torch

from steer_envs.llm import GenerationConfig, make_backend
from steer_envs.llm.base import match_candidates
from steer_envs.llm.tiny import build_tiny_causal_lm

PROMPTS = ["Question: who wrote the novel?\n", "<think> I need to search. </think> <search>", "The river"]


def test_backend_runs_offline():
    import steer_envs.llm.hf  # noqa: F401

    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_a_loaded_model_is_not_kernelized_from_the_hub(tiny_backend):
    # transformers kernelizes every model it loads when the `kernels` package is installed, fetching kernels from the
    # hub (offline, that fails at load on a GPU); the backend must run torch's own layers
    assert tiny_backend.model.use_kernels is False


def test_tiny_builder_is_deterministic(tmp_path, tiny_model_dir):
    again = build_tiny_causal_lm(tmp_path / "again")
    assert (again / "model.safetensors").read_bytes() == (tiny_model_dir / "model.safetensors").read_bytes()


def test_make_backend_shares_one_instance_per_spec(tiny_model_dir):
    a = make_backend(f"hf:{tiny_model_dir}")
    assert make_backend(f"hf:{tiny_model_dir}") is a
    assert make_backend(f"hf:{tiny_model_dir}", shared=False) is not a


def test_greedy_batch_equals_one_by_one(tiny_backend):
    config = GenerationConfig(max_new_tokens=12)
    batch = tiny_backend.generate(PROMPTS, config)
    single = [tiny_backend.generate([p], config)[0] for p in PROMPTS]
    assert [g.text for g in batch] == [g.text for g in single]
    for g in batch:
        assert g.tokens == 12 and g.finish_reason == "length" and g.text


def test_stop_sequences_end_generation_and_are_left_out(tiny_backend):
    # seeded sampling: the stopped run draws the same tokens as the free run up to the stop
    sample = dict(temperature=1.0, seed=3)
    free = tiny_backend.generate([PROMPTS[2]], GenerationConfig(max_new_tokens=24, **sample))[0].text
    words = [w for w in free.split() if len(w) >= 2]
    stop = words[len(words) // 2]
    assert free.index(stop) > 0
    got = tiny_backend.generate(
        [PROMPTS[2]], GenerationConfig(max_new_tokens=24, stop=(stop, "never-appears"), **sample)
    )[0]
    assert got.stop_sequence == stop and got.finish_reason == "stop"
    assert got.text == free[: free.index(stop)]
    assert got.tokens < 24


def test_sampling_is_repeatable_under_a_seed(tiny_backend):
    config = GenerationConfig(max_new_tokens=16, temperature=1.0, top_p=0.95, seed=7)
    first = tiny_backend.generate(PROMPTS, config)
    assert tiny_backend.generate(PROMPTS, config) == first
    other = tiny_backend.generate(PROMPTS, GenerationConfig(max_new_tokens=16, temperature=1.0, seed=8))
    assert [g.text for g in other] != [g.text for g in first]


def test_candidate_logprobs_are_probabilities_consistent_with_the_top_table(tiny_backend):
    cands = ["yes", "no", "Paris"]
    got = tiny_backend.next_token_logprobs(PROMPTS, cands)
    assert len(got) == len(PROMPTS)
    for row in got:
        assert set(row) == set(cands)
        assert all(v <= 0 for v in row.values())
        assert sum(math.exp(v) for v in row.values()) <= 1.0 + 1e-6
    full = tiny_backend.top_logprobs(PROMPTS[:1], k=len(tiny_backend.tokenizer))[0]
    assert sum(math.exp(v) for v in full.values()) == pytest.approx(1.0, abs=1e-3)
    # the same reading a remote backend makes of a server's top-k table
    expected = match_candidates(full, cands)
    for cand in cands:
        assert got[0][cand] == pytest.approx(expected[cand], abs=1e-4)


def test_next_token_logprobs_ignore_left_padding(tiny_backend):
    batch = tiny_backend.next_token_logprobs(PROMPTS, ["yes", "no"])
    single = [tiny_backend.next_token_logprobs([p], ["yes", "no"])[0] for p in PROMPTS]
    for b, s in zip(batch, single):
        assert b["yes"] == pytest.approx(s["yes"], abs=1e-4) and b["no"] == pytest.approx(s["no"], abs=1e-4)


def test_continuation_logprobs_carry_gradients_and_agree_with_next_token(tiny_backend):
    prompt = PROMPTS[0]
    tok = tiny_backend.tokenizer
    yes_id = tok.encode(" yes", add_special_tokens=False)
    assert len(yes_id) == 1
    lp = tiny_backend.continuation_logprobs([prompt, PROMPTS[1]], [" yes", " no answer here"])
    assert lp.shape == (2,) and lp.requires_grad
    next_lp = tiny_backend._last_logprobs([prompt])[0, yes_id[0]].item()
    assert lp[0].item() == pytest.approx(next_lp, abs=1e-4)
    tiny_backend.model.zero_grad()
    (-lp.sum()).backward()
    grads = [p.grad for p in tiny_backend.model.parameters() if p.grad is not None]
    assert grads and any(torch.count_nonzero(g) > 0 for g in grads)
    tiny_backend.model.zero_grad()
    per_token = tiny_backend.continuation_logprobs([PROMPTS[1]], [" no answer here"], reduce="none", grad=False)
    assert per_token[0].sum().item() == pytest.approx(lp[1].item(), abs=1e-4)
    assert not per_token[0].requires_grad


def test_seeded_sampling_forks_the_cuda_rng_of_a_model_on_cuda(tiny_backend, monkeypatch):
    """A seeded generate on a CUDA model reseeds that device's RNG: fork_rng must cover it so the caller's CUDA RNG
    comes back untouched. No GPU here: the model reports cuda:1 and the fork's arguments are read."""
    from types import SimpleNamespace

    from steer_envs.llm.hf import forked_cuda_devices

    assert forked_cuda_devices("cpu") == [] and forked_cuda_devices(torch.device("cuda", 1)) == [1]
    forks = []

    class Stop(Exception):
        pass

    def fork_rng(devices=None, **kwargs):  # records what would be forked, then stops before generate
        forks.append(list(devices))
        raise Stop

    monkeypatch.setattr(torch.random, "fork_rng", fork_rng)
    monkeypatch.setattr(tiny_backend, "model", SimpleNamespace(device=torch.device("cuda", 1)))
    with pytest.raises(Stop):
        tiny_backend._sample_batch(PROMPTS[:1], GenerationConfig(max_new_tokens=4, temperature=1.0, seed=7))
    assert forks == [[1]]
