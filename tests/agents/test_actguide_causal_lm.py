"""The causal-LM learner of ACTGUIDE-RL in text mode: sampling with token log-probs, r_mix per token (same response
after the guided and the unguided prompt), and training steps end to end. A tiny random model in the fast tests;
Gemma 3 270M (``hf:gemma-3-270m``, packaged on PyPI) in the slow one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.actguide.causal_lm import CausalLMLearner, CausalLMSpec
from agents.actguide.config import ActGuideConfig
from agents.actguide.rollout import reset_task, run_group
from agents.actguide.tasks import make_env
from agents.actguide.trainer import ActGuideTrainer, load_learner
from steer_envs.reference_plans import HINT_HEADER

TASK = "musique/2hop__574419_270105"


def config(model: str, **kw) -> ActGuideConfig:
    base = dict(
        benchmarks=["musique"],
        tasks_per_benchmark=2,
        budget=8,
        batch_tasks=1,
        group_size=2,
        max_turns=2,
        learner="causal_lm",
        learner_args={"model": model, "max_new_tokens": 8, "max_transcript_chars": 600},
        update_epochs=1,
    )
    base.update(kw)
    return ActGuideConfig(**base)


def test_text_rollouts_keep_both_views_and_token_logprobs(tiny_dir):
    cfg = config(f"hf:{tiny_dir}")
    env = make_env(cfg)
    learner = CausalLMLearner(CausalLMSpec(**cfg.learner_args))
    reset_task(env, TASK, 0, k=3)
    group = run_group(env, learner, 2, torch.Generator().manual_seed(0))
    step = group[0].steps[0]
    assert step.guided and HINT_HEADER in step.view and HINT_HEADER not in step.unguided_view
    assert isinstance(step.action, str) and step.old_logp.ndim == 1 and step.old_logp.numel() >= 1
    # the behaviour log-probs are the guided view's; r_mix re-scores the same text after the unguided prompt
    guided = learner.token_logprobs([step.view], [step.action])[0]
    unguided = learner.token_logprobs([step.unguided_view], [step.action])[0]
    assert torch.allclose(guided.detach(), step.old_logp, atol=1e-4)
    assert guided.shape == unguided.shape and not torch.allclose(guided, unguided)


def test_a_training_step_end_to_end_with_a_tiny_model(tiny_dir, tmp_path):
    cfg = config(f"hf:{tiny_dir}")
    trainer = ActGuideTrainer(cfg, tmp_path / "run")
    result = trainer.run()
    assert result.budget_used >= 8 and result.log[0]["rollouts"] >= 2
    learner, _ = load_learner(tmp_path / "run")
    assert isinstance(learner, CausalLMLearner)
    # a random model rarely answers right, so give one group rewards by hand: the update must move the weights
    env = make_env(cfg)
    reset_task(env, TASK, 0, k=3)
    group = run_group(env, learner, 2, torch.Generator().manual_seed(1))
    group[0].reward = 1.0
    before = [p.detach().clone() for p in learner.parameters()]
    optimizer = torch.optim.Adam(learner.parameters(), lr=1e-3)
    stats = trainer._update(learner, learner.frozen(), optimizer, [group])
    assert stats["tokens"] > 0 and np.isfinite(stats["loss"]) and stats["r_mix"] > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.parameters()))


def test_trainable_layers_limits_gradients_and_the_reference_copy_to_the_top_blocks(tiny_dir):
    from agents.actguide.causal_lm import transformer_blocks

    learner = CausalLMLearner(CausalLMSpec(model=f"hf:{tiny_dir}", trainable_layers=1))
    blocks = transformer_blocks(learner.model)
    top = {id(p) for p in blocks[-1].parameters()}
    trained = {id(p) for p in learner.parameters() if p.requires_grad}
    assert trained == top and len(blocks) >= 2
    # the KL reference copies the trained block and shares every frozen tensor
    ref = learner.frozen()
    ref_ids = {id(p) for p in ref.parameters()}
    frozen = {id(p) for p in learner.parameters() if not p.requires_grad}
    assert frozen <= ref_ids and not (top & ref_ids)


@pytest.mark.parametrize("bad, message", [(0, "positive number of blocks"), (99, "has 2 transformer blocks")])
def test_bad_trainable_layers_are_clear_errors(tiny_dir, bad, message):
    from steer_envs.errors import SteerEnvsError

    with pytest.raises(SteerEnvsError, match=message):
        CausalLMLearner(CausalLMSpec(model=f"hf:{tiny_dir}", trainable_layers=bad))


@pytest.mark.slow
@pytest.mark.llm
def test_a_training_step_with_gemma(tmp_path):
    # the top 4 of 18 blocks learn: gradients, Adam state and the KL reference's copy of all 18 took the step to
    # 3.6 GB, most of the suite's 4 GB budget (every block trains in the tiny-model test above)
    cfg = config(
        "hf:gemma-3-270m",
        budget=2,
        group_size=2,
        max_turns=1,
        learner_args={
            "model": "hf:gemma-3-270m",
            "max_new_tokens": 8,
            "max_transcript_chars": 600,
            "trainable_layers": 4,
        },
    )
    result = ActGuideTrainer(cfg, tmp_path / "gemma").run()
    row = result.log[0]
    assert row["rollouts"] >= 2 and np.isfinite(row["loss"])
    del result
    learner, meta = load_learner(tmp_path / "gemma")
    assert meta["learner"] == "causal_lm" and isinstance(learner, CausalLMLearner)
    assert learner.spec.trainable_layers == 4 and sum(p.requires_grad for p in learner.parameters()) > 0


# -- token ids, device and dtype -----------------------------------------------------------------
def _views(cfg) -> list[str]:
    """Three real views of different lengths (guided, unguided, a short one), so sampling pads them."""
    env = make_env(cfg)
    reset_task(env, TASK, 0, k=3)
    guided = env._observation()
    unguided = env.unguided_observation()
    return [guided["prompt"], unguided["prompt"], "Question: who wrote the novel? <think>"]


def _forced_logprobs(learner, prompt_ids: list[int], token_ids: tuple[int, ...]) -> torch.Tensor:
    """The log-probs of ``token_ids`` as ``model.generate`` sees them while decoding (KV cache, one token at a time,
    raw logits), forcing its choice to those ids: an independent reading of the distribution sampled from."""
    from transformers import LogitsProcessor, LogitsProcessorList

    class Force(LogitsProcessor):
        def __call__(self, input_ids, scores):
            forced = torch.full_like(scores, float("-inf"))
            forced[:, token_ids[input_ids.shape[1] - len(prompt_ids)]] = 0.0
            return forced

    tok = learner.backend.tokenizer
    out = learner.model.generate(
        torch.tensor([prompt_ids]),
        attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
        max_new_tokens=len(token_ids),
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
        logits_processor=LogitsProcessorList([Force()]),
        pad_token_id=tok.pad_token_id,
        eos_token_id=None,
    )
    assert out.sequences[0, len(prompt_ids) :].tolist() == list(token_ids)
    logits = torch.stack(out.logits, dim=1)[0].float()
    return torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(token_ids)[:, None]).squeeze(-1)


def test_the_logprob_at_sampling_equals_the_rescored_logprob_of_the_same_ids(tiny_dir):
    from agents.actguide.rollout import TextAction

    cfg = config(f"hf:{tiny_dir}")
    learner = CausalLMLearner(CausalLMSpec(**cfg.learner_args))
    views = _views(cfg)
    actions, olds = learner.act(views, torch.Generator().manual_seed(3))
    prompts = learner.backend.encode_prompts(views, room=learner.spec.max_new_tokens)
    retokenised_differently = 0
    for view, prompt_ids, action, old in zip(views, prompts, actions, olds):
        assert isinstance(action, TextAction) and old.shape == (len(action.token_ids),) and old.dtype == torch.float32
        # scored alone (no padding) and in micro-batches of 1 and of 3: the same numbers as at sampling
        alone = learner.token_logprobs([view], [action])[0].detach()
        assert (alone - old).abs().max() <= 1e-5
        # and the numbers generate itself sampled from, one token at a time with its KV cache
        assert (_forced_logprobs(learner, prompt_ids, action.token_ids) - old).abs().max() <= 1e-5
        retokenised_differently += learner.backend.tokenizer.encode(action, add_special_tokens=False) != list(
            action.token_ids
        )
    single = CausalLMLearner(CausalLMSpec(**{**cfg.learner_args, "micro_batch": 1}))
    for a, b in zip(single.token_logprobs(views, actions), olds):
        assert (a.detach() - b).abs().max() <= 1e-5
    # the case the ids exist for: random samples rarely re-tokenise to their own ids
    assert retokenised_differently >= 1


def test_a_response_that_retokenises_differently_is_scored_from_its_ids(tiny_dir):
    from agents.actguide.rollout import TextAction

    learner = CausalLMLearner(CausalLMSpec(model=f"hf:{tiny_dir}", max_new_tokens=8))
    tok = learner.backend.tokenizer
    text = "<search> Paris </search>"
    merged = tok.encode(text, add_special_tokens=False)
    spelled = [i for ch in text for i in tok.encode(ch, add_special_tokens=False)]  # one token per character
    assert tok.decode(spelled) == text and spelled != merged
    view = "Question: What is the capital of France? <think> I need the capital. </think>"
    got = learner.token_logprobs([view], [TextAction(text, spelled)])[0].detach()
    as_text = learner.token_logprobs([view], [text])[0].detach()
    prompt = learner.backend.encode_prompts([view], room=8)[0]
    with torch.no_grad():
        logits = learner.model(torch.tensor([prompt + spelled])).logits[0, len(prompt) - 1 : -1]
    direct = torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(spelled)[:, None]).squeeze(-1)
    assert got.shape == (len(spelled),) and as_text.shape == (len(merged),)
    assert (got - direct).abs().max() <= 1e-5
    assert learner.encode_action(text).token_ids == tuple(merged)  # a plain string is tokenised once, as text


def test_token_ids_survive_pickling_and_a_resumed_run_equals_an_uninterrupted_one(tiny_dir, tmp_path):
    import pickle

    from agents.actguide.rollout import TextAction
    from steer_envs.errors import SteerEnvsError

    cfg = config(f"hf:{tiny_dir}", budget=12)
    env = make_env(cfg)
    learner = CausalLMLearner(CausalLMSpec(**cfg.learner_args))
    reset_task(env, TASK, 0, k=3)
    group = run_group(env, learner, 2, torch.Generator().manual_seed(4))
    back = pickle.loads(pickle.dumps(group))
    for traj, again in zip(group, back):
        for step, copy in zip(traj.steps, again.steps):
            assert isinstance(copy.action, TextAction) and copy.action.token_ids == step.action.token_ids
            assert str(copy.action) == str(step.action) and torch.equal(copy.old_logp, step.old_logp)
            rescored = learner.token_logprobs([copy.view], [copy.action])[0].detach()
            assert (rescored - step.old_logp).abs().max() <= 1e-5
    with pytest.raises(SteerEnvsError, match="no token ids"):
        TextAction("x", [])

    full = ActGuideTrainer(cfg, tmp_path / "full").run()
    assert full.iterations >= 2

    class Stop(Exception):
        pass

    def stop_after_first(i, record):
        if i == 0:
            raise Stop

    with pytest.raises(Stop):
        ActGuideTrainer(cfg, tmp_path / "cut", on_iteration_end=stop_after_first).run()
    resumed = ActGuideTrainer(cfg, tmp_path / "cut", resume=True).run()
    strip = lambda log: [{k: v for k, v in r.items() if not k.endswith("_s")} for r in log]  # noqa: E731
    assert strip(resumed.log) == strip(full.log)
    a, _ = load_learner(tmp_path / "full")
    b, _ = load_learner(tmp_path / "cut")
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


def test_a_bf16_learner_on_cpu_acts_scores_and_trains(tiny_dir):
    cfg = config(
        f"hf:{tiny_dir}",
        learner_args={"model": f"hf:{tiny_dir}", "max_new_tokens": 8, "max_transcript_chars": 600, "dtype": "bfloat16"},
    )
    learner = CausalLMLearner(CausalLMSpec(**cfg.learner_args))
    assert all(p.dtype == torch.bfloat16 for p in learner.parameters()) and learner.device.type == "cpu"
    views = _views(cfg)
    actions, olds = learner.act(views, torch.Generator().manual_seed(5))
    new = learner.token_logprobs(views, actions)
    assert all(t.dtype == torch.float32 and t.requires_grad for t in new)
    assert all((a.detach() - b).abs().max() <= 1e-5 for a, b in zip(new, olds))  # the same scoring path, same dtype
    loss = -torch.cat(new).mean()
    loss.backward()
    grads = [p.grad for p in learner.parameters() if p.requires_grad]
    assert grads and all(g is not None and g.dtype == torch.bfloat16 and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)
    # a whole update through the trainer: advantages and masks meet the bf16 model's fp32 log-probs
    env = make_env(cfg)
    reset_task(env, TASK, 0, k=3)
    group = run_group(env, learner, 2, torch.Generator().manual_seed(6))
    group[0].reward = 1.0
    before = [p.detach().clone() for p in learner.parameters()]
    optimizer = torch.optim.Adam([p for p in learner.parameters() if p.requires_grad], lr=1e-2)
    stats = ActGuideTrainer(cfg, "unused")._update(learner, learner.frozen(), optimizer, [group])
    assert stats["tokens"] > 0 and np.isfinite(stats["loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.parameters()))


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("device", "gpu", "device must be 'cpu', 'cuda', 'cuda:N' or 'auto'"),
        ("dtype", "float16", "dtype must be one of float32, bfloat16"),
        ("micro_batch", 0, "micro_batch must be a positive number"),
    ],
)
def test_bad_device_dtype_and_micro_batch_are_clear_errors(field, value, message):
    from steer_envs.errors import SteerEnvsError

    with pytest.raises(SteerEnvsError, match=message):
        CausalLMSpec(**{field: value})


def test_auto_device_takes_the_cpu_without_a_gpu_and_cuda_without_one_is_a_clear_error(tiny_dir):
    from steer_envs.errors import SteerEnvsError

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert CausalLMLearner(CausalLMSpec(model=f"hf:{tiny_dir}", device="auto")).device.type == "cpu"
    with pytest.raises(SteerEnvsError, match="torch sees no GPU"):
        CausalLMLearner(CausalLMSpec(model=f"hf:{tiny_dir}", device="cuda"))


def test_sampled_ids_run_through_the_token_that_completed_the_stop_string(tiny_dir):
    from steer_envs.llm.base import GenerationConfig

    backend = CausalLMLearner(CausalLMSpec(model=f"hf:{tiny_dir}")).backend
    tok = backend.tokenizer
    prompts = ["The quick brown fox", "<information>Doc 1(Title: Paris) Paris is", "0 1 2 3"]
    # a stop string random text hits early (a space), so every row stops on it
    samples = backend.generate_with_ids(prompts, GenerationConfig(24, 1.0, 1.0, stop=(" ",), seed=7))
    stopped = [s for s in samples if s.generation.stop_sequence == " "]
    assert stopped
    for s, prompt in zip(samples, prompts):
        assert s.prompt_ids == backend.encode_prompts([prompt], room=24)[0]
    for s in stopped:
        text = tok.decode(s.token_ids, skip_special_tokens=True)
        assert " " in text and " " not in tok.decode(s.token_ids[:-1], skip_special_tokens=True)
        assert text.startswith(s.generation.text)
