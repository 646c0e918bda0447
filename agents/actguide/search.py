"""Adaptive minimal intervention: binary search for the smallest guidance ``k`` that gets past the barrier.

The public implementation's rule: ``lo = 0``, ``hi = L``; probe the midpoint with a few fresh rollouts; if any
succeeds, ``hi = mid`` else ``lo = mid + 1``; at most ``max_steps`` probe steps; the answer is ``lo``. With a
monotone success function this finds the minimal successful ``k`` in at most ``⌈log2(L + 1)⌉`` steps. The search
*fails* when no probed ``k`` succeeded, and then the fallback guider (full guidance, ``k = L``) takes over.

A probe whose rollouts all failed on a service (``steer_envs.failures``) says nothing about ``k``: it answers None,
and the search stops with ``unknown`` set (the trainer then leaves the group unguided for that iteration and counts
it); failed rollouts among finished ones are ignored (a failure is not a "no success").

Probes run through a :class:`ProbeRunner`: in prefix mode the states after ``0..L`` reference actions are built
once and every probe forks from one of them (:class:`ForkProbes`); a probe that restarts from the prompt
(:class:`RestartProbes`, and every probe in prompt mode) pays for the prefix again each time. Both count env steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from steer_envs.envs.guided import GuidedSearchEnv

from .rollout import RolloutPolicy, Trajectory, reset_task, run_group


@dataclass
class SearchResult:
    """``k`` the search settled on (``lo``), whether any probe succeeded (else the search failed: every probed
    ``k`` stayed behind the barrier), and the probes ``(k, success)`` in order. ``unknown``: the last probe's
    rollouts all failed on a service, so the search stopped without an answer (``k`` and ``found`` say nothing)."""

    k: int
    found: bool
    probes: list[tuple[int, bool]] = field(default_factory=list)
    unknown: bool = False

    @property
    def steps(self) -> int:
        return len(self.probes)


def max_search_steps(length: int) -> int:
    """``⌈log2(L + 1)⌉``: probe steps a binary search over ``0..L`` needs at most."""
    return math.ceil(math.log2(length + 1)) if length > 0 else 0


def minimal_k(success_at: Callable[[int], bool | None], length: int, max_steps: int = 5) -> SearchResult:
    """Binary search over ``k ∈ [0, length]`` for the smallest ``k`` with ``success_at(k)``; ``success_at`` returning
    None (every rollout of the probe failed on a service) stops the search as ``unknown``."""
    lo, hi = 0, int(length)
    probes: list[tuple[int, bool]] = []
    while lo < hi and len(probes) < max_steps:
        mid = (lo + hi) // 2
        answer = success_at(mid)
        if answer is None:
            return SearchResult(lo, False, probes, unknown=True)
        ok = bool(answer)
        probes.append((mid, ok))
        if ok:
            hi = mid
        else:
            lo = mid + 1
    return SearchResult(lo, any(ok for _, ok in probes), probes)


@dataclass
class ProbeCost:
    """Env steps of the probes: actually spent, and what restarting every probe from the prompt would spend."""

    rollouts: int = 0
    env_steps: int = 0
    restart_env_steps: int = 0

    def add(self, other: ProbeCost) -> None:
        self.rollouts += other.rollouts
        self.env_steps += other.env_steps
        self.restart_env_steps += other.restart_env_steps


def probe_outcome(trajectories: list[Trajectory]) -> bool | None:
    """Whether any finished trajectory succeeded; None when every one failed on a service (no outcome: the probe
    says nothing about ``k``). A failed trajectory's 0 is never read as "no success"."""
    finished = [t for t in trajectories if not t.failed]
    if not finished:
        return None
    return any(t.success for t in finished)


class ProbeRunner:
    """``probe(k)`` runs ``n`` rollouts with guidance ``k`` on one task and says whether any succeeded (None: all of
    them failed on a service; see :func:`probe_outcome`)."""

    def __init__(
        self,
        env: GuidedSearchEnv,
        policy: RolloutPolicy,
        task_id: str,
        seed: int,
        n: int,
        generator: torch.Generator,
        mode: str,
        reference=None,
    ) -> None:
        self.env, self.policy, self.task_id, self.seed, self.n = env, policy, task_id, seed, n
        self.generator, self.mode, self.reference = generator, mode, reference
        self.cost = ProbeCost()
        self.trajectories: list[Trajectory] = []

    def probe(self, k: int) -> bool | None:
        raise NotImplementedError

    def start_state(self, k: int) -> tuple[dict, int]:
        """The env state of guidance ``k`` and the env steps it took to reach it."""
        raise NotImplementedError


class RestartProbes(ProbeRunner):
    """Every probe restarts from the prompt (the public implementation; the only way in prompt mode)."""

    def start_state(self, k: int) -> tuple[dict, int]:
        spent = reset_task(self.env, self.task_id, self.seed, k, self.mode, self.reference)
        return self.env.get_state(), spent

    def probe(self, k: int) -> bool | None:
        trajs = []
        for _ in range(self.n):  # each probe is a fresh episode from the prompt
            state, spent = self.start_state(k)
            group = run_group(self.env, self.policy, 1, self.generator, start=state)
            self.cost.env_steps += spent + group[0].env_steps
            self.cost.restart_env_steps += spent + group[0].env_steps
            trajs.extend(group)
        self.cost.rollouts += self.n
        self.trajectories.extend(trajs)
        return probe_outcome(trajs)


class ForkProbes(ProbeRunner):
    """Prefix mode: the states after ``j`` reference actions (``j = 0..L``) are computed once, on first need, and
    probes fork from them, so a probe pays only for its own steps."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.mode != "prefix":
            raise ValueError("fork probes need plan_mode='prefix' (a hint in the prompt changes every step)")
        self._states: list[tuple[dict, int]] = []  # (state after j actions, prefix searches it holds)

    def start_state(self, k: int) -> tuple[dict, int]:
        if not self._states:
            reset_task(self.env, self.task_id, self.seed, 0, self.mode, self.reference)
            self._states.append((self.env.get_state(), 0))
        while len(self._states) <= k:
            self.env.set_state(self._states[-1][0])
            ran = self.env.advance_prefix(1)
            self.cost.env_steps += ran  # built once, shared by every later probe
            state = self.env.get_state()
            state["episode"].k = len(self._states)
            self._states.append((state, self._states[-1][1] + ran))
        return self._states[k][0], 0

    def probe(self, k: int) -> bool | None:
        state, _ = self.start_state(k)
        prefix_searches = self._states[k][1]
        trajs = run_group(self.env, self.policy, self.n, self.generator, start=state)
        for t in trajs:
            self.cost.env_steps += t.env_steps
            self.cost.restart_env_steps += prefix_searches + t.env_steps
        self.cost.rollouts += self.n
        self.trajectories.extend(trajs)
        return probe_outcome(trajs)


def make_probes(
    env: GuidedSearchEnv,
    policy: RolloutPolicy,
    task_id: str,
    seed: int,
    n: int,
    generator: torch.Generator,
    mode: str,
    reference=None,
) -> ProbeRunner:
    """The probe runner of ``mode``: forks from prefix states built once in prefix mode, restarts in prompt mode."""
    cls = ForkProbes if mode == "prefix" else RestartProbes
    return cls(env, policy, task_id, seed, n, generator, mode, reference)
