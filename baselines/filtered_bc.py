"""Filtered behaviour cloning: the offline alternative to online RL in the steering paper.

1. **Collect offline.** Roll out the frozen executor without supervision on training tasks. At each visited
   state a behaviour policy proposes one intervention (a uniformly drawn catalogue option) with probability
   ``propose``.
2. **Filter by counterfactuals.** From that exact state (``env.unwrapped.fork(seed=...)``) continue ``N``
   rollouts after the intervention and ``N`` without it, with the same continuation seeds (paired). Keep the
   intervention as a positive example only if its mean outcome beats the no-intervention mean by ``margin``;
   otherwise the state is labelled *pass* (the proposal was filtered out).
3. **Supervised learning.** A small MLP over the hashed observation features
   (:class:`~steer_envs.wrappers.TextFeaturizer`) is trained with cross-entropy to predict the kept label.

Nothing is learned from the policy's own outcomes afterwards, which is why the paper finds it weaker than RL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from agents.steering.features import split_observation
from steer_envs.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.failures import episode_failed
from steer_envs.rollouts import Job, concurrent_pool, env_setup, executor_of, using_pool
from steer_envs.wrappers import TextFeaturizer

from .base import MethodContext
from .options import MethodOptions, method_option

CHECKPOINT = "filtered_bc.pt"


@dataclass(frozen=True)
class FilteredBCOptions(MethodOptions):
    tasks: int = method_option(200, "training tasks rolled out without supervision", ge=1)
    N: int = method_option(2, "paired continuations per proposal, with and without it", ge=1)
    propose: float = method_option(
        0.5, "probability that the behaviour policy proposes an intervention at a state", ge=0, le=1
    )
    margin: float = method_option(0.0, "F1 gain over passing a proposal must exceed to be kept")
    epochs: int = method_option(300, "full-batch training epochs of the classifier", ge=1)
    seed: int = method_option(0, "seed of the collection and of the classifier's initial weights")
    tau: float | None = method_option(
        None,
        "intervene when the classifier's probability of not passing is at least tau (empty: its argmax)",
        ge=0,
        le=1,
        deploy=True,
    )


@dataclass
class BCExample:
    features: np.ndarray
    label: int


def _continue_passing(env: Any) -> dict:
    """Run an env (a fork) to the end without intervening; the final step's info."""
    info: dict = {}
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, info = env.step(0)
    return info


def _outcome(base_env: Any, action: int, seeds: list[int]) -> float | None:
    """Mean final F1 of ``action`` then passing over the forks that finished; a fork cut short by a service failure
    (``steer_envs.failures``) has no outcome and is skipped; None when none finished."""
    scores = []
    for seed in seeds:
        fork = base_env.fork(seed=seed)
        _, _, terminated, truncated, info = fork.step(action)
        if not (terminated or truncated):
            info = _continue_passing(fork)
        if not episode_failed(info):
            scores.append(float(info.get("f1", 0.0)))
    return float(np.mean(scores)) if scores else None


def proposal_gain(env: Any, item: tuple[dict, int, list[int]]) -> float | None:
    """Pool work function: restore the snapshot of ``item = (env state, action, seeds)`` and return the paired
    gain of the proposed action over passing (mean outcome after it minus mean outcome without it); None when
    every fork of either branch failed on a service (the proposal is then dropped, not labelled)."""
    state, action, seeds = item
    base = env.unwrapped
    base.set_state(state)
    with_action, without = _outcome(base, action, seeds), _outcome(base, 0, seeds)
    if with_action is None or without is None:
        return None
    return with_action - without


def collect(
    context: MethodContext,
    tasks: int,
    n_rollouts: int,
    propose: float,
    margin: float,
    seed: int,
    featurizer: TextFeaturizer,
) -> tuple[list[BCExample], dict]:
    """Offline collection + counterfactual filtering (steps 1-2).

    The unsupervised rollouts (and every random draw) run here, in order; the paired continuations of every
    proposal go to the context's rollout pool as (snapshot, action, seeds) items, so the kept labels are those
    of the one-process loop whatever the pool."""
    env = context.make_env(split="train", action_mode="discrete")
    base = env.unwrapped
    n_options = len(base.catalogue)
    rng = np.random.default_rng(seed)
    proposals: list[tuple[np.ndarray, int]] = []
    items: list[tuple[dict, int, list[int]]] = []
    stats = {"states": 0, "proposed": 0, "kept": 0, "failed": 0}
    for _episode in tqdm(
        range(tasks), desc="filtered_bc collect", unit="task", disable=not context.progress, dynamic_ncols=True
    ):
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        terminated = truncated = False
        while not (terminated or truncated):
            stats["states"] += 1
            if rng.random() < propose:
                stats["proposed"] += 1
                action = int(rng.integers(1, n_options))
                seeds = [int(rng.integers(2**31)) for _ in range(n_rollouts)]
                items.append((base.get_state(), action, seeds))
                proposals.append((featurizer(*split_observation(obs)), action))
            obs, _, terminated, truncated, _ = env.step(0)
    # an openai: executor's paired continuations wait on the server: many in flight (concurrent_pool)
    with (
        using_pool(concurrent_pool(context.pool, executor_of(env))) as pool,
        tqdm(
            total=len(items), desc="filtered_bc filter", unit="state", disable=not context.progress, dynamic_ncols=True
        ) as bar,
    ):
        gains = pool.map(Job(env_setup(env, pool), proposal_gain), items, progress=bar.update)
    env.close()
    examples: list[BCExample] = []
    for (features, action), gain in zip(proposals, gains):
        if gain is None:  # every fork of a branch failed on a service: no label either way
            stats["failed"] += 1
            continue
        keep = gain > margin
        stats["kept"] += int(keep)
        examples.append(BCExample(features, action if keep else 0))
    return examples, stats


def _classifier(n_features: int, n_actions: int, hidden: int):
    import torch

    return torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n_actions))


def train_classifier(examples: list[BCExample], n_actions: int, epochs: int, seed: int, hidden: int = 64):
    """Step 3: cross-entropy on the kept labels (full-batch Adam; the data set is small)."""
    import torch

    cpu_thread_default()
    torch.manual_seed(seed)
    x = torch.tensor(np.stack([e.features for e in examples]), dtype=torch.float32)
    y = torch.tensor([e.label for e in examples], dtype=torch.long)
    model = _classifier(x.shape[1], n_actions, hidden)
    optim = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    losses = []
    for _ in range(epochs):
        optim.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        losses.append(float(loss.detach()))
    return model, losses


def save_classifier(model, stats: dict, path) -> None:
    """Weights + the shape to rebuild them (tensors and plain data only: loading runs no code)."""
    first, last = model[0], model[-1]
    save_checkpoint(
        {
            "state_dict": model.state_dict(),
            "n_features": first.in_features,
            "hidden": first.out_features,
            "n_actions": last.out_features,
            "stats": stats,
        },
        path,
    )


def load_classifier(path):
    try:
        state = load_checkpoint(path)
    except CheckpointError as exc:
        raise CheckpointError(f"{exc}. Or delete {path} and the method retrains") from None
    model = _classifier(state["n_features"], state["n_actions"], state["hidden"])
    model.load_state_dict(state["state_dict"])
    return model


class BCPolicy:
    """The cloned classifier: its greedy action, or with ``tau`` a threshold on its probability of not passing
    (then the likeliest intervention). ``tau`` is a deployment knob, like the steerer's: it sets the intervention
    rate without retraining, so the classifier can be compared with other methods at the same rate."""

    name = "filtered_bc"

    def __init__(
        self, model: Any, featurizer: TextFeaturizer, run_info: dict | None = None, tau: float | None = None
    ) -> None:
        self.model = model
        self.featurizer = featurizer
        self.run_info = run_info or {}
        self.tau = tau

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        import torch

        with torch.no_grad():
            x = torch.tensor(self.featurizer(*split_observation(observation)), dtype=torch.float32)
            logits = self.model(x[None])[0]
        if self.tau is None:
            return int(logits.argmax())
        p_pass = float(torch.softmax(logits, dim=-1)[0])
        return int(logits[1:].argmax()) + 1 if 1.0 - p_pass >= self.tau else 0


def build_filtered_bc(context: MethodContext) -> BCPolicy:
    chosen = context.options_of(FilteredBCOptions)
    tasks, n_rollouts, propose, margin = chosen.tasks, chosen.N, chosen.propose, chosen.margin
    epochs, seed, tau = chosen.epochs, chosen.seed, chosen.tau
    featurizer = TextFeaturizer(buckets=128, max_turns=context.max_turns)
    probe = context.make_env()
    n_actions = len(probe.unwrapped.catalogue)
    probe.close()
    path = context.checkpoint_dir() / CHECKPOINT
    run_info = {"tasks": tasks, "N": n_rollouts, "propose": propose, "margin": margin, "epochs": epochs, "seed": seed}
    if path.is_file():
        model = load_classifier(path)
    else:
        examples, stats = collect(context, tasks, n_rollouts, propose, margin, seed, featurizer)
        model, losses = train_classifier(examples, n_actions, epochs, seed)
        save_classifier(model, stats, path)
        if context.training_log is not None:
            with open(context.training_log, "a", encoding="utf-8") as fh:
                for step, loss in enumerate(losses):
                    if step % 10 == 0 or step == len(losses) - 1:
                        fh.write(json.dumps({"method": "filtered_bc", "step": step, "loss": loss, **stats}) + "\n")
    return BCPolicy(model.eval(), featurizer, run_info=run_info, tau=tau)
