"""AdmissiblePolicy: uniform at initialisation, the hint-following mixture on hand-made features, finite gradients."""

from __future__ import annotations

import math

import pytest
import torch

from agents.actguide.policy import HINT_PRESENT, HINT_SIMILARITY, AdmissiblePolicy, PolicySpec
from steer_envs.envs.admissible import FEATURE_NAMES, HINT_COLUMNS

F = len(FEATURE_NAMES)


def test_initial_policy_is_uniform_whatever_the_seed():
    for seed in (0, 1, 2):
        p = AdmissiblePolicy(PolicySpec(init_seed=seed))
        feats = torch.rand(2, 6, F)
        feats[..., list(HINT_COLUMNS)] = 0
        mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
        probs = p.log_probs(feats, mask).exp()
        assert torch.allclose(probs[0, :3], torch.full((3,), 1 / 3)) and probs[0, 3:].sum() == 0
        assert torch.allclose(probs[1], torch.full((6,), 1 / 6))


def test_hint_mixture_hand_computed():
    p = AdmissiblePolicy(PolicySpec(follow=0.7, sharpness=8.0))
    feats = torch.zeros(1, 4, F)
    feats[0, :, HINT_PRESENT] = 1
    feats[0, 1, HINT_SIMILARITY] = 1.0
    feats[0, 2, HINT_SIMILARITY] = 0.5
    mask = torch.tensor([[1, 1, 1, 1]])
    probs = p.log_probs(feats, mask).exp()[0]
    h1 = 1 / (1 + math.exp(-4.0))  # softmax of 8*1.0 and 8*0.5 over the two similar candidates
    expected = [0.3 * 0.25, 0.7 * h1 + 0.3 * 0.25, 0.7 * (1 - h1) + 0.3 * 0.25, 0.3 * 0.25]
    assert probs.tolist() == pytest.approx(expected, abs=1e-5)
    # the unguided view (hint columns 0) is the unguided policy alone
    feats[..., list(HINT_COLUMNS)] = 0
    assert p.log_probs(feats, mask).exp()[0].tolist() == pytest.approx([0.25] * 4)


def test_gradients_stay_finite_with_empty_slots_and_hints():
    p = AdmissiblePolicy()
    feats = torch.zeros(3, 5, F)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]])
    feats[0, :, HINT_PRESENT] = 1
    feats[0, 1, HINT_SIMILARITY] = 0.8
    feats[1, :, HINT_PRESENT] = 1  # a hint step no candidate resembles: the policy acts unguided
    logp = p.action_log_prob(feats, mask, torch.tensor([1, 0, 4]))
    logp.sum().backward()
    assert torch.isfinite(logp).all()
    assert all(torch.isfinite(x.grad).all() for x in p.parameters() if x.grad is not None)
    assert p.hint_logit.grad is not None and p.hint_logit.grad.abs() > 0
