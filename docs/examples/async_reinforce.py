"""REINFORCE over the EnvPool-style async vector env, against a served executor: a cleanrl-style single file.

``num_envs`` steering envs run at once; each ``recv()`` hands the learner the ``batch_size`` envs whose executor
replied first, the policy acts on those alone and ``send`` puts them back to work while the rest still wait on
their requests. An episode's log-probabilities and rewards are kept per env id, so the arrival order never mixes
two episodes. The policy is linear over the hashed text features (``FeatureObservation``); the update is REINFORCE
with a running-mean baseline, every ``update_every`` finished episodes (their log-probabilities computed at the
update from the stored observations and actions).

    python docs/examples/async_reinforce.py --executor openai:qwen@http://127.0.0.1:8000/v1 \\
        --num-envs 64 --batch-size 16

Against the simulator (``--executor sim:default``) the same loop runs without a server.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import numpy as np
import torch

from steer_envs.async_vector import make_async_pool
from steer_envs.wrappers import FeatureObservation


@dataclass
class EnvBuffer:
    """One env's running episode: each observation acted on, the action taken and the reward that followed it."""

    observations: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    acted: bool = False  # the last send was a real action (not the reset that follows an episode's end)


def reinforce_loss(policy: torch.nn.Module, finished: list[tuple[EnvBuffer, float]]) -> torch.Tensor:
    """The mean over episodes of ``-(return - baseline) * sum_t log pi(a_t | o_t)``."""
    terms = []
    for episode, advantage in finished:
        logits = policy(torch.as_tensor(np.stack(episode.observations)))
        chosen = torch.log_softmax(logits, dim=-1)[torch.arange(len(episode.actions)), torch.tensor(episode.actions)]
        terms.append(-advantage * chosen.sum())
    return torch.stack(terms).mean()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executor", default="sim:default")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=64, help="finished episodes to train on")
    parser.add_argument("--update-every", type=int, default=8, help="finished episodes per policy update")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse(argv)
    torch.manual_seed(args.seed)
    pool = make_async_pool(
        "steer_envs/SearchSteering-v0",
        args.num_envs,
        batch_size=args.batch_size,
        wrappers=[FeatureObservation],
        executor=args.executor,
        split="train",
        max_turns=args.max_turns,
        action_mode="discrete",
    )
    policy = torch.nn.Linear(pool.single_observation_space.shape[0], int(pool.single_action_space.n))
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(args.seed)
    buffers = [EnvBuffer() for _ in range(pool.num_envs)]
    finished: list[tuple[EnvBuffer, float]] = []  # (episode, its return minus the baseline when it ended)
    returns: list[float] = []
    baseline, updates = 0.0, 0
    try:
        pool.async_reset(seed=args.seed)
        while len(returns) < args.episodes:
            obs, rewards, terminations, truncations, info = pool.recv()
            ids = [int(i) for i in info["env_id"]]
            ended = terminations | truncations
            for j, i in enumerate(ids):
                buffer = buffers[i]
                if buffer.acted:
                    buffer.rewards.append(float(rewards[j]))
                if ended[j]:  # the episode is over: its REINFORCE term, then a fresh buffer
                    episode_return = sum(buffer.rewards)
                    returns.append(episode_return)
                    if buffer.actions:
                        finished.append((buffer, episode_return - baseline))
                    baseline += 0.1 * (episode_return - baseline)
                    buffers[i] = EnvBuffer()
            with torch.no_grad():
                probs = torch.softmax(policy(torch.as_tensor(obs)), dim=-1)
            actions = torch.multinomial(probs, 1, generator=generator).squeeze(1).numpy()
            for j, i in enumerate(ids):
                buffers[i].acted = not ended[j]  # after an end, the next send resets the env (action ignored)
                if buffers[i].acted:
                    buffers[i].observations.append(obs[j])
                    buffers[i].actions.append(int(actions[j]))
            pool.send(actions, ids)
            if len(finished) >= args.update_every:
                optimizer.zero_grad()
                reinforce_loss(policy, finished).backward()
                optimizer.step()
                finished, updates = [], updates + 1
    finally:
        pool.close()
    quarter = max(1, len(returns) // 4)
    stats = {
        "episodes": float(len(returns)),
        "updates": float(updates),
        "first_quarter_return": float(np.mean(returns[:quarter])),
        "last_quarter_return": float(np.mean(returns[-quarter:])),
    }
    print(" ".join(f"{k}={v:.3f}" for k, v in stats.items()))
    return stats


if __name__ == "__main__":
    main()
