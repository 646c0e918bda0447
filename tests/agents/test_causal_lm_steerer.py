"""CausalLMSteerer: fast path from yes/no log-odds, slow path as one <think>…</think> + grammar sequence.

Fast tests use a tiny random transformer built offline; the slow test uses the real Gemma 3 270M
(``hf:gemma-3-270m``, packaged on PyPI) on a handful of states.
"""

import gc

import numpy as np
import pytest
import torch

from agents.steering.causal_lm import CausalLMSteerer
from agents.steering.config import SteeringConfig
from agents.steering.interventions import options_from_catalogue
from agents.steering.objectives import grpo_loss, ranking_loss
from agents.steering.trainer import SteeringTrainer, load_model
from steer_envs.envs.catalogue import STEERING

OBS = {
    "goal": "Who directed the film Jaws?",
    "transcript": "<search> jaws director </search>\n\n<information>Doc 1(Title: Jaws (film)) Jaws was directed by "
    "Steven Spielberg\nDoc 2(Title: Steven Spielberg) born 1946</information>\n\n<search> jaws director </search>",
    "turn": np.int64(2),
    "interventions": np.int64(0),
}
OBS2 = {**OBS, "transcript": "", "turn": np.int64(0)}


def _steerer(path, **kw):
    return CausalLMSteerer(options_from_catalogue(STEERING), model=path, max_think_tokens=6, **kw)


def test_fast_path_is_yes_minus_no_logit(tiny_dir):
    st = _steerer(tiny_dir)
    ids = torch.tensor(
        [
            st._prompt_ids(
                OBS,
                "\n\nYou supervise the search agent above. Is it drifting from the goal, so that an intervention now "
                "would change the outcome? Answer yes or no.\nAnswer:",
            )
        ]
    )
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
    cfg = SteeringConfig(
        m=1,
        k=2,
        G=2,
        N=1,
        bank_tasks=3,
        benchmarks=["nq"],
        backbone="causal_lm",
        backbone_args={"model": tiny_dir, "max_think_tokens": 4, "max_prompt_tokens": 512},
    )
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
    cfg = SteeringConfig(
        m=1,
        k=2,
        G=2,
        N=1,
        bank_tasks=2,
        benchmarks=["nq"],
        backbone="causal_lm",
        backbone_args={
            "model": "hf:gemma-3-270m",
            "lora": True,
            "max_think_tokens": 8,
            "max_prompt_tokens": 256,
            # one sequence per pass: Gemma's 262k-word vocabulary makes every scored
            # position's logits 1 MB, and a backward pass over 8 rows held 6.2 GB
            "micro_batch": 1,
            "batch_size": 4,
        },
    )
    result = SteeringTrainer(cfg, tmp_path / "gemma").run()
    assert result.log[0]["states"] == 2
    gc.collect()  # the trainer's steerer (peft modules hold reference cycles) before a second copy is loaded
    st, payload = load_model(tmp_path / "gemma")
    assert payload["spec"]["lora"] is True
    z = st.fast_scores([OBS])
    assert torch.isfinite(z).all()
    # the reloaded adapter still trains (the slow path's gradient on reload is covered on the tiny model: a second
    # Gemma slow-path backward here took the suite past its memory budget)
    z.sum().backward()
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


# -- at scale: backend loading, batched fast path, generate-based slow path, peft adapters --------------------------
OBSERVATIONS = [OBS, OBS2] + [{**OBS, "transcript": OBS["transcript"][: 37 * i]} for i in range(1, 6)]


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    from steer_envs.llm.qwen_shaped import build_random_qwen2

    return str(build_random_qwen2(tmp_path_factory.mktemp("qwen") / "lm", hidden_size=64, layers=2))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_batched_fast_path_equals_one_at_a_time(tiny_dir, qwen_dir, arch, side):
    """Padded batches (chunks of batch_size, prompts of 7 different lengths) give the z of each prompt alone."""
    st = _steerer(tiny_dir if arch == "llama" else qwen_dir, batch_size=3, padding_side=side)
    with torch.no_grad():
        batched = st.fast_scores(OBSERVATIONS)
        alone = torch.cat([st.fast_scores([o]) for o in OBSERVATIONS])
    assert len({len(st._prompt_ids(o, "")) for o in OBSERVATIONS}) == len(OBSERVATIONS)
    assert batched.shape == (len(OBSERVATIONS),)
    assert float((batched - alone).abs().max()) <= 1e-4
    assert float(alone.std()) > 1e-3  # the prompts really differ, so the equality is not vacuous
    # with gradients (ranking loss): micro-batches of micro_batch under checkpointing, same values
    st.micro_batch = 2
    assert float((st.fast_scores(OBSERVATIONS).detach() - alone).abs().max()) <= 1e-4


def _argument_steerer(path, **kw):
    """Only the option with a free slot and no pass: every sample goes through NAME and ARGUMENT choices."""
    options = [o for o in options_from_catalogue(STEERING) if o.needs_argument]
    return CausalLMSteerer(options, model=path, max_think_tokens=6, allow_pass=False, **kw)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_logprob_at_sampling_equals_logprob_at_update(tiny_dir, qwen_dir, arch):
    """generate's own distributions over the sampled ids (+ the grammar choices) == the batched re-scoring, in
    micro-batches, with and without gradients: GRPO's ratio starts at exactly 1."""
    st = _argument_steerer(tiny_dir if arch == "llama" else qwen_dir, micro_batch=3, batch_size=5)
    samples = st.sample_slow(OBS, 8, torch.Generator().manual_seed(0))
    assert all(s.payload["arg_pos"] >= 0 and s.argument for s in samples)
    assert all(0 < len(s.payload["think"]) <= 6 for s in samples)
    assert len({tuple(s.payload["think"]) for s in samples}) > 1  # G different samples from one generate call
    at_sampling = torch.tensor([s.payload["logp"] for s in samples])
    with torch.no_grad():
        rescored = st.slow_logprobs(OBS, samples)
    with_grad = st.slow_logprobs(OBS, samples)
    assert with_grad.requires_grad
    assert float((rescored - at_sampling).abs().max()) <= 1e-4
    assert float((with_grad.detach() - at_sampling).abs().max()) <= 1e-4


def test_slow_path_is_seeded_by_the_generator_and_leaves_the_global_rng_alone(tiny_dir):
    st = _steerer(tiny_dir)
    before = torch.get_rng_state()
    a = st.sample_slow(OBS, 4, torch.Generator().manual_seed(7))
    assert torch.equal(torch.get_rng_state(), before)
    b = st.sample_slow(OBS, 4, torch.Generator().manual_seed(7))
    c = st.sample_slow(OBS, 4, torch.Generator().manual_seed(8))
    ids = lambda samples: [s.payload["think"] for s in samples]  # noqa: E731
    assert ids(a) == ids(b) and ids(a) != ids(c)


def test_micro_batched_gradients_equal_one_pass_and_model_checkpointing(tiny_dir):
    """The update's gradient does not depend on micro_batch nor on the model's own gradient checkpointing."""

    def grads(**kw):
        st = _argument_steerer(tiny_dir, **kw)
        samples = st.sample_slow(OBS, 3, torch.Generator().manual_seed(0))
        st.train()
        (-st.slow_logprobs(OBS, samples).sum() + st.fast_scores(OBSERVATIONS).sum()).backward()
        return torch.cat([p.grad.flatten() for p in st.trainable_parameters()]), st

    whole, _ = grads(micro_batch=64)
    small, _ = grads(micro_batch=2)
    layered, st = grads(micro_batch=4, gradient_checkpointing=True)
    assert st.lm.is_activation_checkpointing
    scale = float(whole.abs().max())
    assert scale > 0
    # float32 sums in another order: equal up to rounding relative to the gradient's scale (a fresh-clone run saw
    # 1.14e-05 absolute against this tolerance's 1e-05); a wrong micro-batch weighting is off by a factor
    assert float((whole - small).abs().max()) <= 1e-5 * max(scale, 1.0) * 4
    assert float((whole - layered).abs().max()) <= 1e-5 * max(scale, 1.0) * 4


def test_device_and_dtype_go_through_the_backend_and_into_the_spec(tiny_dir):
    st = _steerer(tiny_dir, dtype="bfloat16", device="auto")
    assert next(st.lm.parameters()).dtype == torch.bfloat16
    spec = st.build_spec()
    assert spec["dtype"] == "bfloat16" and spec["device"] == "auto"
    with torch.no_grad():
        assert torch.isfinite(st.fast_scores([OBS, OBS2])).all()
    samples = st.sample_slow(OBS, 2, torch.Generator().manual_seed(0))
    assert torch.isfinite(st.slow_logprobs(OBS, samples)).all()
    with pytest.raises(Exception, match="floating-point torch dtype"):
        _steerer(tiny_dir, dtype="int8")
    with pytest.raises(Exception, match="not a torch device"):
        _steerer(tiny_dir, device="tpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(Exception, match="sees no CUDA GPU"):
            _steerer(tiny_dir, device="cuda")


def test_qlora_needs_a_gpu_and_bitsandbytes(tiny_dir):
    try:
        import bitsandbytes  # noqa: F401

        has_bnb = True
    except ImportError:
        has_bnb = False
    if torch.cuda.is_available() and has_bnb:
        pytest.skip("this machine can run QLoRA")
    with pytest.raises(Exception, match="qlora=True needs (a CUDA GPU|bitsandbytes)"):
        _steerer(tiny_dir, qlora=True, device="auto")


def test_trained_lora_steerer_is_a_peft_adapter_folder_that_peft_reloads(tiny_dir, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from agents.steering.trainer import save_model

    st = _steerer(tiny_dir, lora=True)
    with torch.no_grad():  # B starts at zero (the adapter would be a no-op): give it a trained-looking value
        g = torch.Generator().manual_seed(0)
        for name, p in st.lm.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    save_model(st, tmp_path / "model.pt", tau=0.0)  # what the trainer calls every round
    folder = tmp_path / "adapter"
    assert (folder / "adapter_config.json").is_file() and (folder / "adapter_model.safetensors").is_file()
    base = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)
    plain = _steerer(tiny_dir)
    with torch.no_grad():
        z_base = plain.fast_scores(OBSERVATIONS)
        plain.lm = PeftModel.from_pretrained(base, str(folder))
        reloaded = plain.fast_scores(OBSERVATIONS)
        trained = st.fast_scores(OBSERVATIONS)
        via_option = _steerer(tiny_dir, adapter=str(folder)).fast_scores(OBSERVATIONS)
    assert float((reloaded - trained).abs().max()) <= 1e-5
    assert float((via_option - trained).abs().max()) <= 1e-5
    assert float((trained - z_base).abs().max()) > 1e-3  # the adapter changes the scores
    save_model(st, tmp_path / "model.pt", tau=0.0)  # rewriting swaps the folder in whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter", "model.pt"]
    with pytest.raises(Exception, match="no LoRA adapter"):
        _steerer(tiny_dir).save_adapter(tmp_path / "x")
