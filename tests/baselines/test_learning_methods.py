"""Learning baselines on tiny budgets: the RL trainer on all three envs, checkpoint reuse, filtered BC."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from baselines.filtered_bc import collect, train_classifier
from baselines.registry import MethodContext, build_policy, get_method, parse_method
from steer_envs.wrappers import TextFeaturizer

TINY = "G=2,N=2,bank_tasks=12,k=4,m=2"


def _context(tmp_path, label):
    return MethodContext(
        benchmarks=("nq", "hotpotqa"),
        workdir=tmp_path / label,
        training_log=tmp_path / f"{label}.jsonl",
        progress=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["steering_rl", "planning_rl", "verification_rl"])
def test_rl_methods_train_with_the_same_trainer_on_their_env(tmp_path, name):
    spec = parse_method(f"{name}:{TINY}")
    agent = build_policy(spec, _context(tmp_path, spec.training_label))
    env = gym.make(get_method(name).env_id)
    catalogue = env.unwrapped.catalogue
    env.close()
    # the options are the method's own environment's catalogue after its no-op, in catalogue order
    assert [o.name for o in agent.steerer.options] == [t.name for t in catalogue[1:]]
    model = tmp_path / spec.training_label / "model.pt"
    assert model.is_file()
    rows = (tmp_path / f"{spec.training_label}.jsonl").read_text().splitlines()
    assert len(rows) == 2  # one row per round, mirrored for the report
    stamp = model.stat().st_mtime_ns
    # a different tau is a deployment choice: same checkpoint, no retraining
    again = build_policy(parse_method(f"{name}:{TINY},tau=0.2"), _context(tmp_path, spec.training_label))
    assert model.stat().st_mtime_ns == stamp and again.tau == 0.2
    assert all(
        np.allclose(p.detach(), q.detach()) for p, q in zip(agent.steerer.parameters(), again.steerer.parameters())
    )


@pytest.mark.slow
def test_filtered_bc_keeps_only_improving_interventions_and_fits_them(tmp_path):
    context = _context(tmp_path, "bc")
    featurizer = TextFeaturizer(buckets=64)
    examples, stats = collect(context, tasks=12, n_rollouts=2, propose=1.0, margin=0.0, seed=0, featurizer=featurizer)
    assert stats["proposed"] == stats["states"] == len(examples)  # propose=1: every visited state is tried
    assert stats["kept"] == sum(e.label != 0 for e in examples)
    assert 0 < stats["kept"] < stats["proposed"]  # the filter keeps some, rejects some
    model, losses = train_classifier(examples, n_actions=9, epochs=200, seed=0)
    assert losses[-1] < 0.5 * losses[0]
    import torch

    with torch.no_grad():
        pred = model(torch.tensor(np.stack([e.features for e in examples]))).argmax(-1).numpy()
    labels = np.array([e.label for e in examples])
    assert (pred == labels).mean() > max(0.8, (labels == 0).mean())
