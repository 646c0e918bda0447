"""Rollouts of an ACTGUIDE policy on GuidedSearch-v0: groups of episodes of one task, run in lock step.

Every step keeps what the losses need: the action, the behaviour policy's log-probabilities (of the view it acted
on, guided when a hint was shown) and both views of the state (``info["unguided_observation"]`` from the env), so
``r_mix = π_θ(a | unguided) / π_old(a | guided)`` can be computed later without touching the env again.

A group starts from one env state (a fresh reset, or a prefix state a probe forks from) copied ``n`` times, so
members differ only by the policy's sampling: the GRPO group of ACTGUIDE-RL.

A text learner's action is a :class:`TextAction`: the text the env reads, carrying the token ids the policy sampled,
so the losses score those ids rather than a re-tokenisation of the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from steer_envs.envs.guided import GuidedSearchEnv
from steer_envs.errors import SteerEnvsError


class TextAction(str):
    """A text action together with the token ids that spell it for the policy.

    It is a ``str`` (its text), so the env, the transcript and every text consumer take it unchanged; a learner
    scores ``token_ids``. For a sampled action those are the sampled ids, which need not be what the text
    re-tokenises to (a BPE merge across the stop, a re-added closing tag, an end-of-sequence token). Equality and
    hashing are the text's. Pickles and deep-copies with its ids (trajectories and env states stay serialisable).
    """

    token_ids: tuple[int, ...]

    def __new__(cls, text: str, token_ids: Sequence[int]) -> TextAction:
        ids = tuple(int(t) for t in token_ids)
        if not ids:
            raise SteerEnvsError(
                f"TextAction {text!r} has no token ids; give the ids the policy sampled (at least one)"
            )
        obj = super().__new__(cls, text)
        obj.token_ids = ids
        return obj

    def __getnewargs__(self) -> tuple[str, tuple[int, ...]]:  # type: ignore[override]  # pickle / copy rebuild with the ids
        return str(self), self.token_ids

    def __repr__(self) -> str:
        return f"TextAction({str(self)!r}, token_ids={list(self.token_ids)!r})"


@dataclass
class StepRecord:
    """One decision. ``view`` / ``unguided_view``: what the policy needs to score an action in each view
    (discrete: ``(features, mask)``; text: the context string). ``action``: an index, or a :class:`TextAction`
    (text plus the sampled token ids). ``old_logp``: per-token log-probs under the behaviour policy of the view
    acted on (1 token for a discrete action), on the learner's device."""

    view: Any
    unguided_view: Any
    action: Any
    old_logp: torch.Tensor
    guided: bool


@dataclass
class Trajectory:
    task_id: str
    benchmark: str
    k: int
    mode: str
    steps: list[StepRecord] = field(default_factory=list)
    reward: float = 0.0
    em: float = 0.0
    f1: float = 0.0
    env_steps: int = 0
    turns: int = 0
    #: set when a service (the retriever) failed after its retries: the trajectory has no outcome, and the trainer
    #: drops it from its group instead of reading its 0 as a reward (``steer_envs.failures``)
    failure: str | None = None
    #: a guided rollout's record of the unguided group it replaced (their rewards: the state's value under the
    #: unguided policy, the baseline of ``guided_baseline="unguided"``); empty for an unguided rollout
    replaced: tuple[float, ...] = ()

    @property
    def success(self) -> bool:
        return self.reward > 0

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def guided(self) -> bool:
        return self.k > 0


class RolloutPolicy(Protocol):
    """What a learner offers the trainer (both learners implement it)."""

    action_mode: str

    def view(self, obs: dict) -> Any: ...

    def act(self, views: Sequence[Any], generator: torch.Generator) -> tuple[list[Any], list[torch.Tensor]]:
        """Sample one action per view; return the actions (a text learner's are :class:`TextAction`, keeping the
        sampled token ids) and their per-token log-probs (no gradient, on the learner's device)."""
        ...

    def token_logprobs(self, views: Sequence[Any], actions: Sequence[Any]) -> list[torch.Tensor]:
        """Per-token log-probs of ``actions[i]`` in ``views[i]`` (with gradient, on the learner's device); a text
        learner scores a :class:`TextAction`'s ids and tokenises a plain string once."""
        ...


def run_group(
    env: GuidedSearchEnv,
    policy: RolloutPolicy,
    n: int,
    generator: torch.Generator,
    start: dict | None = None,
) -> list[Trajectory]:
    """``n`` episodes from the env's current state (or ``start``, a ``get_state()`` snapshot), in lock step.

    ``env_steps`` of each trajectory counts only the steps taken here (a shared prefix is accounted by the caller).
    """
    if start is not None:
        env.set_state(start)
    base = env.get_state()
    s0 = base["episode"]
    envs = []
    for _ in range(n):
        clone = env.fork()
        clone.set_state(base)
        envs.append(clone)
    trajs = [Trajectory(s0.task.id, s0.task.benchmark, s0.k, s0.mode) for _ in range(n)]
    obs = [e._observation() for e in envs]
    unguided = [e.unguided_observation() if e.hint_actions else o for e, o in zip(envs, obs)]
    alive = [i for i in range(n) if not envs[i].state.done]
    while alive:
        views = [policy.view(obs[i]) for i in alive]
        actions, logps = policy.act(views, generator)
        for j, i in enumerate(alive):
            guided = bool(envs[i].hint_actions)
            trajs[i].steps.append(
                StepRecord(views[j], policy.view(unguided[i]) if guided else views[j], actions[j], logps[j], guided)
            )
            o, reward, terminated, truncated, info = envs[i].step(actions[j])
            obs[i] = o
            unguided[i] = info["unguided_observation"]
            trajs[i].env_steps += 1
            if terminated or truncated:
                trajs[i].reward = float(reward)
                trajs[i].em = float(info["em"])
                trajs[i].f1 = float(info["f1"])
                trajs[i].turns = int(info["turns"])
        alive = [i for i in alive if not envs[i].state.done]
    for traj, e in zip(trajs, envs):
        if e.state.failure_source is not None:  # failed during this group, or already in its start state
            traj.failure = f"{e.state.failure_source}: {e.state.failure}"
    return trajs


def reset_task(
    env: GuidedSearchEnv, task_id: str, seed: int, k: int = 0, mode: str | None = None, reference=None
) -> int:
    """Reset ``env`` to ``task_id`` with guidance ``k``; return the env steps the reset spent (prefix searches)."""
    options: dict[str, Any] = {"task_id": task_id, "plan_k": int(k)}
    if mode is not None:
        options["plan_mode"] = mode
    if reference is not None:
        options["reference"] = reference
    env.reset(seed=seed, options=options)
    state = env.state
    assert state is not None  # a reset sets it
    return state.env_steps
