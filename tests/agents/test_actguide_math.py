"""ACTGUIDE-RL's pieces on hand-computed examples: the binary search for the minimal k, r_mix, the clipped loss,
the KL to the reference, and the shared GRPO advantages (the steering trainer uses the same functions)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.actguide.search import max_search_steps, minimal_k
from agents.grpo import (
    baseline_advantages,
    clipped_surrogate,
    group_advantages,
    kl_k3,
    mixed_ratio,
    policy_gradient_loss,
    shaped_weight,
)
from agents.steering.objectives import grpo_advantages, grpo_clipped_loss, grpo_loss


@pytest.mark.parametrize("length", range(0, 33))
def test_binary_search_finds_the_minimal_k_of_every_monotone_function(length):
    bound = math.ceil(math.log2(length + 1)) if length else 0
    assert max_search_steps(length) == bound
    for threshold in range(0, length + 2):  # success iff k >= threshold; threshold = length + 1: never
        calls = []

        def success(k, t=threshold, calls=calls):
            calls.append(k)
            return k >= t

        result = minimal_k(success, length, max_steps=5 if bound <= 5 else bound)
        assert result.steps == len(calls) <= bound
        assert all(0 <= k <= length for k in calls)
        if threshold <= length:
            assert result.k == threshold
            # found = some probe succeeded; only k = L may be returned unprobed (then the fallback gives L anyway)
            assert result.found == any(k >= threshold for k in calls)
            assert result.found or threshold == length
        else:
            assert result.k == length and not result.found


def test_binary_search_follows_the_public_rule_step_by_step():
    seen = []
    result = minimal_k(lambda k: seen.append(k) or k >= 3, 7)
    assert seen == [3, 1, 2]  # lo=0,hi=7 -> mid 3 ok (hi=3) -> mid 1 fails (lo=2) -> mid 2 fails (lo=3)
    assert (result.k, result.found, result.probes) == (3, True, [(3, True), (1, False), (2, False)])


def test_binary_search_stops_after_max_steps():
    seen = []
    result = minimal_k(lambda k: seen.append(k) or False, 1000, max_steps=5)
    assert len(seen) == 5 and not result.found


def test_r_mix_is_the_unguided_over_guided_probability_ratio():
    # π_θ(y | unguided) = 0.2, π_old(y | guided) = 0.8 -> r = 0.25; and 0.5 / 0.25 -> 2
    unguided = torch.log(torch.tensor([0.2, 0.5]))
    guided_old = torch.log(torch.tensor([0.8, 0.25]))
    assert torch.allclose(mixed_ratio(unguided, guided_old), torch.tensor([0.25, 2.0]))


def test_clipped_loss_hand_computed():
    # ratios 0.25, 2.0, 1.1 with advantages +1, +1, -2 and ε = 0.2:
    #   min(0.25*1, 0.8*1) = 0.25 ; min(2*1, 1.2*1) = 1.2 ; min(1.1*-2, 1.1*-2) = -2.2
    logp = torch.log(torch.tensor([0.2, 0.5, 0.55]))
    old = torch.log(torch.tensor([0.8, 0.25, 0.5]))
    adv = torch.tensor([1.0, 1.0, -2.0])
    loss = clipped_surrogate(logp, old, adv, clip=0.2)
    assert loss.item() == pytest.approx(-(0.25 + 1.2 - 2.2) / 3, rel=1e-5)
    # negative advantage below 1 - ε is clipped: min(0.5*-1, 0.8*-1) = -0.8
    assert clipped_surrogate(
        torch.log(torch.tensor([0.5])), torch.zeros(1), torch.tensor([-1.0])
    ).item() == pytest.approx(0.8)


def test_clipped_loss_gradient_flows_only_where_not_clipped():
    logp = torch.log(torch.tensor([0.2, 0.5])).requires_grad_(True)
    old = torch.log(torch.tensor([0.8, 0.25]))
    clipped_surrogate(logp, old, torch.tensor([1.0, 1.0])).backward()
    # first: ratio 0.25 < 0.8, unclipped: d/dlogp of -(r*A)/2 = -r/2 = -0.125 ; second: clipped at 1.2, no gradient
    assert logp.grad.tolist() == pytest.approx([-0.125, 0.0])


def test_kl_k3_hand_computed_and_nonnegative():
    logp = torch.log(torch.tensor([0.5, 0.1, 0.3]))
    ref = torch.log(torch.tensor([0.25, 0.1, 0.6]))
    # exp(r - l) - (r - l) - 1 : 0.5 - ln 0.5 - 1 ; 0 ; 2 - ln 2 - 1
    expected = [0.5 - math.log(0.5) - 1, 0.0, 2 - math.log(2) - 1]
    assert kl_k3(logp, ref).tolist() == pytest.approx(expected, abs=1e-6)
    rng = np.random.default_rng(0)
    a, b = torch.tensor(rng.normal(size=100)), torch.tensor(rng.normal(size=100))
    assert (kl_k3(a, b) >= -1e-12).all()


def test_group_advantages_hand_computed_and_shared_with_steering():
    adv = group_advantages([1.0, 0.0, 0.0, 1.0])
    assert adv.tolist() == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)
    assert group_advantages([0.0, 0.0, 0.0]).tolist() == [0.0, 0.0, 0.0]  # an all-fail (hard) group teaches nothing
    # the steering trainer's GRPO is this one with b_s in the group
    assert np.array_equal(grpo_advantages([0.5, 1.0, 0.0], 0.5), group_advantages([0.5, 1.0, 0.0], extra=[0.5]))
    assert grpo_loss is policy_gradient_loss and grpo_clipped_loss is clipped_surrogate


def test_baseline_advantages_use_the_replaced_groups_mean_and_the_std_of_both_groups():
    # guided rewards [1, 1, 0, 0] against an all-fail unguided group [0, 0, 0, 0]: mean 0, std of all 8 = sqrt(3/16)
    adv = baseline_advantages([1.0, 1.0, 0.0, 0.0], [0.0] * 4)
    assert adv.tolist() == pytest.approx([1 / math.sqrt(3 / 16)] * 2 + [0.0, 0.0], rel=1e-5)
    # a guided group that all succeeds still teaches (within-group GRPO would give it zeros)
    assert (baseline_advantages([1.0] * 4, [0.0] * 4) > 0).all() and not group_advantages([1.0] * 4).any()
    assert not baseline_advantages([0.0] * 4, [0.0] * 4).any()  # nothing differs: nothing to learn
    assert not baseline_advantages([1.0, 0.0], []).any()  # no baseline group: no advantage is made up


def test_shaped_weight_of_guided_tokens_hand_computed():
    # r = 0.25 -> 0.25 / 0.35 ; r = 2 -> 2 / 2.1 ; no gradient flows through the weight
    unguided = torch.log(torch.tensor([0.2, 0.5])).requires_grad_(True)
    old = torch.log(torch.tensor([0.8, 0.25]))
    w = shaped_weight(unguided, old, gamma=0.1)
    assert w.tolist() == pytest.approx([0.25 / 0.35, 2 / 2.1], rel=1e-5) and not w.requires_grad
