"""Hand-computed checks of the steering algorithm's formulas (docs/methods.md, steering)."""

import math

import numpy as np
import pytest
import torch

from agents.steering.gate import gate_decision, gate_probability, logit, priority, sigmoid
from agents.steering.objectives import (
    grpo_advantages,
    grpo_loss,
    intervention_effect,
    ranking_loss,
    same_task_pairs,
    sampled_pairs,
)
from agents.steering.selection import epsilon_greedy_select
from steer_envs.errors import SteerEnvsError


# -- gate ---------------------------------------------------------------------------------------------------
def test_gate_formula_hand_computed():
    # z = 0 -> v = 0.5; tau = 0.2 -> logit(tau) = ln(0.25) ; p = σ(0 - ln 0.25) = σ(ln 4) = 4/5
    assert priority(0.0) == pytest.approx(0.5)
    assert gate_probability(0.0, 0.2) == pytest.approx(0.8)
    # z = ln 3 -> v = 0.75; tau = 0.75 -> p = 0.5 (the threshold)
    assert gate_probability(math.log(3), 0.75) == pytest.approx(0.5)
    # z = ln 9 (v = 0.9), tau = 0.5: p = σ(ln 9) = 0.9 = v (tau = 0.5 leaves v unchanged)
    assert gate_probability(math.log(9), 0.5) == pytest.approx(0.9)
    # written as the paper does: σ(logit(v) − logit(τ))
    v, tau = 0.3, 0.6
    assert gate_probability(logit(v), tau) == pytest.approx(sigmoid(logit(v) - logit(tau)))
    assert gate_probability(logit(v), tau) == pytest.approx(1 / (1 + (0.7 / 0.3) * (0.6 / 0.4)))


def test_gate_deterministic_variant_and_bernoulli_rate():
    assert gate_decision(math.log(3), 0.74, deterministic=True) is True  # v = 0.75 >= 0.74
    assert gate_decision(math.log(3), 0.76, deterministic=True) is False
    rng = np.random.default_rng(0)
    draws = [gate_decision(0.0, 0.2, rng) for _ in range(20000)]
    assert np.mean(draws) == pytest.approx(0.8, abs=0.01)


def test_lower_tau_opens_the_gate_more_often():
    ps = [gate_probability(-1.0, t) for t in (0.1, 0.3, 0.5, 0.7, 0.9)]
    assert all(a > b for a, b in zip(ps, ps[1:]))


@pytest.mark.parametrize("tau", [0.0, 1.0, -0.1, 2, "x"])
def test_bad_tau_is_a_clear_error(tau):
    with pytest.raises(SteerEnvsError, match="tau"):
        gate_probability(0.0, tau)


def test_stochastic_gate_needs_rng():
    with pytest.raises(SteerEnvsError, match="rng"):
        gate_decision(0.0, 0.5)


# -- q(s) ---------------------------------------------------------------------------------------------------
def test_q_is_mean_absolute_change():
    # |0.8-0.5| + |0.5-0.5| + |0.2-0.5| + |1.0-0.5| = 0.3 + 0 + 0.3 + 0.5 = 1.1 -> /4
    assert intervention_effect([0.8, 0.5, 0.2, 1.0], 0.5) == pytest.approx(0.275)
    assert intervention_effect([0.4, 0.4], 0.4) == 0.0
    # a harmful intervention counts as much as a helpful one
    assert intervention_effect([0.0], 0.6) == pytest.approx(intervention_effect([1.0], 0.4))


# -- ranking loss -------------------------------------------------------------------------------------------
def test_same_task_pairs_orders_by_q_and_skips_ties_and_other_tasks():
    tasks = ["a", "a", "b", "a", "b"]
    q = [0.5, 0.1, 0.9, 0.5, 0.2]
    assert sorted(same_task_pairs(tasks, q)) == [(0, 1), (2, 4), (3, 1)]


def test_sampled_pairs_cross_tasks_skip_ties_and_respect_the_cap():
    q = [0.5, 0.1, 0.9, 0.5, 0.2]
    rng = np.random.default_rng(0)
    every = sorted(sampled_pairs(q, 100, rng))  # all 9 ordered pairs with a gap (the tie 0~3 is skipped)
    assert every == [(0, 1), (0, 4), (2, 0), (2, 1), (2, 3), (2, 4), (3, 1), (3, 4), (4, 1)]
    few = sampled_pairs(q, 4, np.random.default_rng(1))
    assert len(few) == len(set(few)) == 4 and set(few) <= set(every)
    assert few == sampled_pairs(q, 4, np.random.default_rng(1))  # same generator seed, same pairs
    assert sampled_pairs([0.3], 10, rng) == []


def test_config_fingerprint_hashes_every_field_as_it_is():
    import hashlib
    import json

    from agents.steering.config import SteeringConfig

    config = SteeringConfig(rank_pairs="any", log_with="tensorboard")
    data = {k: v for k, v in config.to_dict().items() if k != "log_with"}  # the one field that only records the run
    assert config.fingerprint() == hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    assert SteeringConfig(rank_pairs="any").fingerprint() != SteeringConfig().fingerprint()
    with pytest.raises(SteerEnvsError, match="rank_pairs"):
        SteeringConfig(rank_pairs="global")


def test_ranking_loss_value_and_gradient_direction():
    z = torch.tensor([1.0, 0.0, -1.0], requires_grad=True)
    pairs = [(0, 1), (2, 1)]  # state 0 above 1 (right order), state 2 above 1 (wrong order)
    loss = ranking_loss(z, pairs)
    expected = (math.log1p(math.exp(-1.0)) + math.log1p(math.exp(1.0))) / 2
    assert float(loss) == pytest.approx(expected)
    loss.backward()
    g = z.grad
    # gradient descent (−grad) raises the scores that should be higher and lowers the one that should be lower
    assert g[0] < 0 and g[2] < 0 and g[1] > 0
    # the misordered pair pulls harder: σ(1) vs σ(−1)
    assert float(-g[2]) == pytest.approx(torch.sigmoid(torch.tensor(1.0)).item() / 2)
    assert float(-g[0]) == pytest.approx(torch.sigmoid(torch.tensor(-1.0)).item() / 2)
    assert float(g.sum()) == pytest.approx(0.0, abs=1e-7)  # only the order is learnt


def test_ranking_loss_without_pairs_is_zero_and_differentiable():
    z = torch.tensor([0.3], requires_grad=True)
    loss = ranking_loss(z, [])
    assert float(loss) == 0.0
    loss.backward()
    assert z.grad is not None and float(z.grad.abs().sum()) == 0.0


# -- GRPO with the baseline in the group ---------------------------------------------------------------------
def test_grpo_advantages_hand_computed():
    # group = {0.5, 1.0, 0.0, b=0.5}: mean 0.5, population std sqrt((0 + .25 + .25 + 0)/4) = sqrt(0.125)
    adv = grpo_advantages([0.5, 1.0, 0.0], baseline=0.5)
    s = math.sqrt(0.125)
    assert adv[0] == pytest.approx(0.0)  # ties the mean -> zero
    assert adv[1] == pytest.approx(0.5 / s, rel=1e-5)
    assert adv[2] == pytest.approx(-0.5 / s, rel=1e-5)  # below b_s and the others -> negative


def test_baseline_inside_group_changes_the_sign():
    # Without b_s, 0.6 would be above the intervention mean (0.5); with b_s = 0.9 in the group it is below
    # the mean of {0.6, 0.4, 0.9} = 0.633 and gets a negative advantage: it must beat not intervening.
    adv = grpo_advantages([0.6, 0.4], baseline=0.9)
    assert adv[0] < 0 and adv[1] < 0
    adv_helpful = grpo_advantages([0.6, 0.4], baseline=0.0)
    assert adv_helpful[0] > 0


def test_grpo_all_tied_gives_zero():
    assert np.all(grpo_advantages([0.3, 0.3, 0.3], 0.3) == 0.0)


def test_grpo_loss_pushes_up_positive_advantage_samples():
    logits = torch.zeros(3, requires_grad=True)
    logp = torch.log_softmax(logits, dim=0)
    loss = grpo_loss(logp, torch.tensor([1.0, 0.0, -1.0]))
    assert float(loss) == pytest.approx(0.0, abs=1e-6)  # advantages sum to zero at uniform logp
    loss.backward()
    assert logits.grad[0] < 0 < logits.grad[2]  # descent raises sample 0, lowers sample 2


# -- ε-greedy selection without replacement ---------------------------------------------------------------------
def test_greedy_selection_takes_top_priorities_in_order():
    rng = np.random.default_rng(0)
    assert epsilon_greedy_select([0.1, 0.9, 0.5, 0.7], 3, 0.0, rng) == [1, 3, 2]


def test_selection_never_repeats_and_caps_at_bank_size():
    rng = np.random.default_rng(1)
    for eps in (0.0, 0.5, 1.0):
        picked = epsilon_greedy_select(list(np.random.default_rng(2).random(20)), 20, eps, rng)
        assert sorted(picked) == list(range(20))
    assert len(epsilon_greedy_select([0.3, 0.2], 5, 0.3, rng)) == 2


def test_selection_epsilon_mixes_in_uniform_draws():
    priorities = list(range(100))  # top state is index 99
    firsts = [epsilon_greedy_select(priorities, 1, 0.5, np.random.default_rng(s))[0] for s in range(400)]
    top = np.mean([f == 99 for f in firsts])
    assert top == pytest.approx(0.5 + 0.5 / 100, abs=0.08)  # 1−ε greedy plus ε·(1/100) uniform
    assert len(set(firsts)) > 20


def test_selection_ties_break_to_lower_index():
    assert epsilon_greedy_select([0.5, 0.5, 0.5], 2, 0.0, np.random.default_rng(0)) == [0, 1]


def test_discrete_mode_draws_no_argument_and_gives_it_no_gradient():
    """In discrete mode the env fills a slot itself: the slow path must not sample an argument it would discard,
    nor put its log-probability into GRPO (noise into the shared encoder)."""
    import torch

    from agents.steering.encoder import EncoderSteerer
    from agents.steering.interventions import options_from_catalogue
    from steer_envs.envs.catalogue import STEERING

    obs = {
        "goal": "Who directed Jaws?",
        "transcript": "<search> Jaws </search>\n\n<information>Doc 1(Title: "
        "Jaws (film)) Jaws is a film by Steven Spielberg.</information>\n\n",
        "turn": 1,
        "interventions": 0,
    }
    steerer = EncoderSteerer(options_from_catalogue(STEERING), hash_dim=1 << 10)
    titled = [i for i, o in enumerate(steerer.options) if o.needs_argument]
    with torch.no_grad():
        steerer.option_head.bias.fill_(-20.0)
        steerer.option_head.bias[titled[0]] = 20.0  # always the option with a free slot
    text_sample = steerer.sample_slow(obs, 1, torch.Generator().manual_seed(0))[0]
    assert text_sample.argument and text_sample.payload["arg_pos"] >= 0
    steerer.set_action_mode("discrete")
    sample = steerer.sample_slow(obs, 1, torch.Generator().manual_seed(0))[0]
    assert sample.argument == "" and sample.payload["arg_pos"] == -1
    steerer.zero_grad()
    steerer.slow_logprobs(obs, [sample]).sum().backward()
    assert steerer.arg_query.weight.grad is None or float(steerer.arg_query.weight.grad.abs().sum()) == 0.0
