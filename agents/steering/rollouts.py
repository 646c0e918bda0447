"""Environment-side work of the trainer: the state bank and the counterfactual continuation rollouts.

The state bank (the algorithm's first step) holds every decision point of no-intervention rollouts of the frozen
executor, as a picklable environment snapshot plus the observation the steerer saw. Continuations (step 3)
restore a snapshot, fork the environment with a fixed seed, apply the branch's first action (an intervention,
or pass for ``b_s``) and let the executor run to the end with pass. All branches of a state use the *same* N
seeds (common random numbers), so ``R̄_{s,j} − b_s`` measures the intervention, not the luck of the draw.

By default a continuation passes to the end after its first action (the paper's algorithm: single interventions).
With a :class:`ContinuationPolicy` (``SteeringConfig.continuation="policy"``) the later decisions of every branch
are taken by the current steerer instead, so a label measures the first action *followed by the policy's own
repeated interventions*: the cost of repetition (a rejection creating another hand-off, a role derailed by many
notes) enters ``R̄_{s,j}`` and ``b_s``. The policy's draws are seeded by the continuation seed, so the branches of
one state still share their random numbers and the same seed gives the same label.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from steer_envs.errors import SteerEnvsError
from steer_envs.failures import failure_of
from steer_envs.ids import STEERING_ENV
from steer_envs.protocol import EnvProtocol, make_env
from steer_envs.rollouts import Job, concurrent_pool, env_setup, executor_of, using_pool

PASS_ACTIONS = {"discrete": 0, "text": "pass"}
#: a continuation that a service failure cut short (``steer_envs.failures``) is rerun this many times with a fresh
#: seed, then dropped: its 0 is not a return and must never enter ``R̄_{s,j}``, ``b_s``, q(s) or the advantages
CONTINUATION_RETRIES = 2


@dataclass
class BankState:
    """One decision point of a no-intervention rollout. ``q`` is the latest measured ``q(s)`` (None = never)."""

    task_id: str
    benchmark: str
    turn: int
    observation: Any
    env_state: Any
    episode_return: float = 0.0
    priority: float = 0.0
    q: float | None = None
    measured_round: int | None = None
    used: bool = False


def make_steering_env(
    executor: str,
    split: str,
    *,
    benchmarks=None,
    max_turns: int = 10,
    metric: str = "f1",
    cost: float = 0.0,
    action_mode: str = "text",
    data_dir=None,
    task_ids=None,
    env_id: str = STEERING_ENV,
):
    """The trainer's env (SearchSteering-v0 unless the config names another id, e.g. HandoffSteering-v0):
    :func:`steer_envs.make_env` with these settings as the protocol (kept for its callers; new code calls
    ``steer_envs.make_env(env_id, config.env_protocol, action_mode=...)``)."""
    protocol = EnvProtocol(
        executor=executor,
        benchmarks=benchmarks,
        split=split,
        max_turns=max_turns,
        metric=metric,
        intervention_cost=cost,
        data_dir=data_dir,
    )
    extra: dict[str, Any] = {"action_mode": action_mode}
    if task_ids is not None:
        extra["task_ids"] = list(task_ids)
    return make_env(env_id, protocol, **extra)


def bank_episode(env, item: tuple[str, int, str]) -> list[BankState]:
    """One no-intervention rollout of task ``item = (task_id, seed, action_mode)``: each decision point becomes a
    bank state. A pool work function (module level, so worker processes can run it)."""
    task_id, seed, action_mode = item
    base = env.unwrapped
    pass_action = PASS_ACTIONS[action_mode]
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    episode: list[BankState] = []
    done = False
    while not done:
        episode.append(
            BankState(
                task_id=str(info.get("task_id", task_id)),
                benchmark=str(info.get("benchmark", "")),
                turn=len(episode),
                observation=copy.deepcopy(obs),
                env_state=base.get_state(),
            )
        )
        obs, reward, terminated, truncated, info = env.step(pass_action)
        done = terminated or truncated
    for state in episode:
        state.episode_return = float(reward)
    return episode


def collect_state_bank(
    env, task_ids: Sequence[str], seed: int, action_mode: str, progress: Callable[[int], None] | None = None, pool=None
) -> list[BankState]:
    """Roll out each task once with pass at every decision point; every observation becomes a bank state.

    Task ``i`` uses seed ``seed + i`` whoever runs it, so any ``pool`` gives the same bank in the same order."""
    items = [(task_id, seed + i, action_mode) for i, task_id in enumerate(task_ids)]
    with using_pool(concurrent_pool(pool, executor_of(env))) as pool:  # openai: many rollouts in flight
        episodes = pool.map(Job(env_setup(env, pool), bank_episode), items, progress=progress)
    bank = [state for episode in episodes for state in episode]
    if not bank:
        raise SteerEnvsError("the state bank is empty: no training task produced a decision point")
    return bank


#: gates of a :class:`ContinuationPolicy`: "tau" draws the gate at the config's τ; "open" runs the slow path at every
#: later decision (the every-hand-off regime, where only the slow path's own pass lets a decision by)
CONTINUATION_GATES = ("tau", "open")
#: τ of an open gate (as baselines.handoff.OPEN_GATE_TAU): p = σ(z − logit τ) ≈ 1 for any z
_OPEN_TAU = 1e-12


@dataclass
class ContinuationPolicy:
    """The policy of a continuation's later decisions: the steerer, its gate and the env's action mode. Each
    continuation gets a fresh :class:`~agents.steering.agent.SteeringAgent` seeded by the continuation's seed."""

    steerer: Any
    tau: float = 0.5
    gate: str = "tau"
    action_mode: str = "discrete"

    def __post_init__(self) -> None:
        if self.gate not in CONTINUATION_GATES:
            raise SteerEnvsError(f"continuation gate must be one of {CONTINUATION_GATES}, got {self.gate!r}")

    def agent(self, seed: int):
        from .agent import SteeringAgent

        tau = _OPEN_TAU if self.gate == "open" else self.tau
        return SteeringAgent(self.steerer, tau=tau, action_mode=self.action_mode, seed=int(seed), name="continuation")


@dataclass(frozen=True)
class Continuation:
    """One continuation's return, or the failure that cut it short (then ``total`` is no return at all)."""

    total: float
    failure: str | None = None

    @property
    def failed(self) -> bool:
        return self.failure is not None


def continuation_outcome(
    env, state: BankState, first_action, seed: int, action_mode: str, policy: ContinuationPolicy | None = None
) -> Continuation:
    """One rollout: restore ``state``, fork with ``seed``, take ``first_action``, then pass to the end (or, with a
    ``policy``, let it take every later decision); a rollout a service failure truncated comes back with its
    ``failure`` (``steer_envs.failures``)."""
    base = env.unwrapped
    base.set_state(state.env_state)
    branch = base.fork(seed=seed)
    pass_action = PASS_ACTIONS[action_mode]
    agent = policy.agent(seed) if policy is not None else None
    total = 0.0
    obs, reward, terminated, truncated, info = branch.step(first_action)
    total += float(reward)
    while not (terminated or truncated):
        action = pass_action if agent is None else agent.act(obs, info)
        obs, reward, terminated, truncated, info = branch.step(action)
        total += float(reward)
    close = getattr(branch, "close", None)
    if close:
        close()
    return Continuation(total, failure_of(info))


def continuation_return(env, state: BankState, first_action, seed: int, action_mode: str) -> float:
    """The return of :func:`continuation_outcome`; NaN when a service failure cut the rollout short (a failed
    rollout has no return, and a NaN cannot be averaged into a label unnoticed the way a 0 can)."""
    outcome = continuation_outcome(env, state, first_action, seed, action_mode)
    return float("nan") if outcome.failed else outcome.total


def retry_seed(seed: int, attempt: int) -> int:
    """The fresh seed of retry ``attempt`` (1, 2, ...) of the continuation seeded ``seed`` (the same in any process)."""
    return int(np.random.default_rng([int(seed), int(attempt), 9173]).integers(0, 2**31 - 1))


def continuation_seeds(key: Sequence[int], n: int) -> list[int]:
    """The ``n`` continuation seeds of one measured state, derived from ``key`` (e.g. run seed, round, state index):
    every branch of the state uses the same list, and the same key gives the same list in any process."""
    return [int(x) for x in np.random.default_rng(list(key)).integers(0, 2**31 - 1, size=n)]


@dataclass
class StateMeasurement:
    """Step 3 for one state: ``b_s`` and ``R̄_{s,j}`` for its ``G`` samples, each the mean over the continuations
    that finished. ``None`` marks a mean with no finished continuation at all (every try failed).

    ``failed_continuations`` counts every rollout a service failure cut short (retries included);
    ``dropped_continuations`` the continuations given up after :data:`CONTINUATION_RETRIES` retries."""

    baseline: float | None
    returns: list[float | None]
    rollouts: int = 0
    cache_hits: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    failed_continuations: int = 0
    dropped_continuations: int = 0

    @property
    def usable(self) -> bool:
        """Whether the state can be learned from this round: its baseline and at least one sample were measured."""
        return self.baseline is not None and any(r is not None for r in self.returns)

    @property
    def valid(self) -> list[int]:
        """Indices of the samples whose return was measured."""
        return [j for j, r in enumerate(self.returns) if r is not None]

    def measured(self) -> tuple[float, list[float]]:
        """A usable state's baseline and its measured samples' returns (in :attr:`valid` order)."""
        if self.baseline is None:
            raise ValueError("this state's baseline was not measured: check usable first")
        return self.baseline, [r for r in self.returns if r is not None]


def measure_state(
    env,
    state: BankState,
    actions: Sequence[Any],
    seeds: Sequence[int],
    action_mode: str,
    retries: int = CONTINUATION_RETRIES,
    policy: ContinuationPolicy | None = None,
) -> StateMeasurement:
    """Average ``N`` continuations (``seeds``) for pass and each action; identical actions share rollouts.

    Sharing is exact because the branches of one state use the same seeds and the simulated executor is
    deterministic given its seed; for a nondeterministic executor it is still an unbiased estimate.

    A continuation a service failure truncated is rerun up to ``retries`` times with a fresh seed
    (:func:`retry_seed`), then dropped: means are over the continuations that finished, never over a failure's 0.
    ``policy`` (optional) takes the later decisions of every continuation (:class:`ContinuationPolicy`).
    """
    cache: dict[Any, float | None] = {}
    rollouts = hits = failed = dropped = 0

    def one(action, seed: int) -> float | None:
        nonlocal rollouts, failed, dropped
        for attempt in range(retries + 1):
            outcome = continuation_outcome(
                env, state, action, seed if attempt == 0 else retry_seed(seed, attempt), action_mode, policy
            )
            rollouts += 1
            if not outcome.failed:
                return outcome.total
            failed += 1
        dropped += 1
        return None

    def mean_return(action) -> float | None:
        nonlocal hits
        key = (type(action).__name__, action)
        if key in cache:
            hits += 1
            return cache[key]
        values = [v for v in (one(action, s) for s in seeds) if v is not None]
        cache[key] = float(np.mean(values)) if values else None
        return cache[key]

    baseline = mean_return(PASS_ACTIONS[action_mode])
    returns = [mean_return(a) for a in actions]
    return StateMeasurement(
        baseline, returns, rollouts, hits, failed_continuations=failed, dropped_continuations=dropped
    )


def measure_item(env, item: tuple[Any, ...]) -> StateMeasurement:
    """Pool work function: :func:`measure_state` of ``item = (state, actions, seeds, action_mode[, policy])``."""
    state, actions, seeds, action_mode, *policy = item
    return measure_state(env, state, actions, seeds, action_mode, policy=policy[0] if policy else None)


def measure_states(
    env,
    requests: Sequence[tuple[BankState, Sequence[Any], Sequence[int]]],
    action_mode: str,
    pool=None,
    progress: Callable[[int], None] | None = None,
    policy: ContinuationPolicy | None = None,
) -> list[StateMeasurement]:
    """:func:`measure_state` for every ``(state, actions, seeds)``, on ``pool`` (default: here), in order.

    Each measurement depends only on its snapshot, actions and seeds, so the labels are identical whichever
    worker measures which state. The default pool becomes a concurrent pool for an I/O-bound executor
    (:func:`~steer_envs.rollouts.concurrent_pool`): an ``openai:`` executor's continuations wait on the server."""
    items: list[tuple[Any, ...]] = [
        (state, list(actions), list(seeds), action_mode) for state, actions, seeds in requests
    ]
    if policy is not None:  # it travels with each item (a process pool pickles the steerer once per item)
        items = [(*item, policy) for item in items]
    with using_pool(concurrent_pool(pool, executor_of(env))) as pool:
        return pool.map(Job(env_setup(env, pool), measure_item), items, progress=progress)
