"""CausalLMSteerer: fast path from yes/no log-odds, slow path as one <think>…</think> + grammar sequence.

Fast tests use a tiny random transformer built offline; the slow test uses the real Gemma 3 270M
(``hf:gemma-3-270m``, packaged on PyPI) on a handful of states.
"""
import numpy as np
import pytest
import torch

from agents.steering.causal_lm import CausalLMSteerer
from agents.steering.config import SteeringConfig
from agents.steering.interventions import options_from_catalogue
from agents.steering.objectives import grpo_loss, ranking_loss
from agents.steering.trainer import SteeringTrainer, load_model
from steer_envs.envs.catalogue import STEERING
from steer_envs.llm.tiny import build_tiny_causal_lm

OBS = {
    "goal": "Who directed the film Jaws?",
    "transcript": "<search> jaws director </search>\n\n<information>Doc 1(Title: Jaws (film)) Jaws was directed by "
    "Steven Spielberg\nDoc 2(Title: Steven Spielberg) born 1946</information>\n\n<search> jaws director </search>",
    "turn": np.int64(2),
    "interventions": np.int64(0),
}
OBS2 = {**OBS, "transcript": "", "turn": np.int64(0)}


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("tiny") / "lm"))


def _steerer(path, **kw):
    return CausalLMSteerer(options_from_catalogue(STEERING), model=path, max_think_tokens=6, **kw)


def test_fast_path_is_yes_minus_no_logit(tiny_dir):
    st = _steerer(tiny_dir)
    ids = torch.tensor([st._prompt_ids(OBS, "\n\nYou supervise the search agent above. Is it drifting from the goal, so that an intervention now would change the outcome? Answer yes or no.\nAnswer:")])
    logits = st.lm(input_ids=ids).logits[0, -1]
    z = st.fast_scores([OBS])[0]
    assert float(z) == pytest.approx(float(logits[st.yes_id] - logits[st.no_id]), abs=1e-5)


def test_slow_path_output_follows_the_grammar_and_logprobs_match(tiny_dir):
    st = _steerer(tiny_dir)
    samples = st.sample_slow(OBS, 4, torch.Generator().manual_seed(0))
    names = {e.name for e in STEERING[1:]} | {"pass"}
    for s in samples:
        out = s.payload["output"]
        assert out.startswith("<think>") and "</think>\nIntervention: " in out
        assert out.split("Intervention: ")[1].split(":")[0] in names
        assert s.is_pass or s.text.startswith(s.option.render(OBS, s.argument)[:10])
    lp = st.slow_logprobs(OBS, samples)
    assert lp.shape == (4,) and bool(torch.isfinite(lp).all()) and bool((lp < 0).all())
    # greedy decoding is deterministic
    g1 = st.sample_slow(OBS, 1, torch.Generator().manual_seed(1), greedy=True)[0]
    g2 = st.sample_slow(OBS, 1, torch.Generator().manual_seed(2), greedy=True)[0]
    assert g1.payload["output"] == g2.payload["output"]


@pytest.mark.parametrize("lora", [False, True])
def test_gradients_reach_the_parameters(tiny_dir, lora):
    st = _steerer(tiny_dir, lora=lora)
    samples = st.sample_slow(OBS, 2, torch.Generator().manual_seed(0))
    loss = grpo_loss(st.slow_logprobs(OBS, samples), torch.tensor([1.0, -1.0]))
    loss = loss + ranking_loss(st.fast_scores([OBS, OBS2]), [(0, 1)])
    loss.backward()
    trainable = [(n, p) for n, p in st.named_parameters() if p.requires_grad]
    with_grad = [n for n, p in trainable if p.grad is not None and float(p.grad.abs().sum()) > 0]
    assert len(with_grad) >= len(trainable) // 2
    if lora:
        assert all("lora" in n for n, _ in trainable)


def test_training_round_end_to_end_and_checkpoint_reload(tiny_dir, tmp_path):
    cfg = SteeringConfig(m=1, k=2, G=2, N=1, bank_tasks=3, benchmarks=["nq"], backbone="causal_lm",
                         backbone_args={"model": tiny_dir, "max_think_tokens": 4, "max_prompt_tokens": 256})
    result = SteeringTrainer(cfg, tmp_path / "lm").run()
    assert len(result.log) == 1 and result.log[0]["states"] == 2
    a, _ = load_model(tmp_path / "lm")
    b, _ = load_model(tmp_path / "lm")
    assert torch.equal(a.fast_scores([OBS]), b.fast_scores([OBS]))
    sa = a.sample_slow(OBS, 2, torch.Generator().manual_seed(5))
    sb = b.sample_slow(OBS, 2, torch.Generator().manual_seed(5))
    assert [s.payload["output"] for s in sa] == [s.payload["output"] for s in sb]
    assert torch.allclose(a.slow_logprobs(OBS, sa), b.slow_logprobs(OBS, sb))


@pytest.mark.slow
@pytest.mark.llm
def test_gemma_270m_training_round_on_a_handful_of_states(tmp_path):
    cfg = SteeringConfig(m=1, k=2, G=2, N=1, bank_tasks=2, benchmarks=["nq"], backbone="causal_lm",
                         backbone_args={"model": "hf:gemma-3-270m", "lora": True, "max_think_tokens": 8,
                                        "max_prompt_tokens": 256})
    result = SteeringTrainer(cfg, tmp_path / "gemma").run()
    assert result.log[0]["states"] == 2
    st, payload = load_model(tmp_path / "gemma")
    assert payload["spec"]["lora"] is True
    z = st.fast_scores([OBS])
    assert torch.isfinite(z).all()
    samples = st.sample_slow(OBS, 2, torch.Generator().manual_seed(0))
    lp = st.slow_logprobs(OBS, samples)
    (-lp.sum() + z.sum()).backward()
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in st.trainable_parameters())


def test_the_update_step_keeps_no_activations_in_the_autograd_graph(tiny_dir):
    """Scoring with gradients saves only what activation checkpointing needs: the version that kept every
    position's vocabulary-sized logits and every layer's activations saved 133 MB here, and 13 GB on Gemma."""
    st = _steerer(tiny_dir)
    samples = st.sample_slow(OBS, 2, torch.Generator().manual_seed(0))
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = -st.slow_logprobs(OBS, samples).sum() + st.fast_scores([OBS, OBS2]).sum()
    assert sum(saved) < 1_000_000, f"{sum(saved) / 1e6:.1f} MB saved for backward"
    loss.backward()  # and the gradients still arrive
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in st.trainable_parameters())
