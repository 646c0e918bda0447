"""Methods for HandoffSteering-v0, the five-role pipeline supervised at its hand-offs (the multi-agent variant of
the steering setting: a supervisor between the roles). They are the steering methods of the single-agent tables,
handed the hand-off env and its catalogue:

* ``handoff_none``: no supervision (the reference row);
* ``handoff_random``: a random catalogue intervention at each hand-off with probability ``p`` (25% by default,
  the paper's coverage);
* ``handoff_best_fixed_rule``: one catalogue option at one hand-off index, chosen on dev (testbed rule 3,
  docs/architecture.md);
* ``handoff_zero_shot``: the steering agent without RL (an *untrained* encoder steerer over the hand-off
  features; not a prompted LLM);
* ``handoff_rl``: the same agent trained by the unchanged steering trainer (state bank, ε-selection, G x N
  counterfactual continuations through ``fork``, ranking loss + GRPO) on the train split.

Operating points, for both steerers: ``coverage=0.25`` chooses τ on the *dev* split so that interventions cover
that share of agent turns (every agent turn hands off once, so coverage = interventions / decisions); ``every=1``
opens the gate at every hand-off (the paper's "intervening at every hand-off"); otherwise ``tau`` is used as given.

The every-hand-off regime. The paper's action space is pass ∪ A_int at *every* decision, but the slow path of the
default steerer has no pass: with the gate open it must intervene at each hand-off. These options are off by
default:

* ``slow_pass=1`` (both steerers): "pass" is one of the slow path's choices (``EncoderSteerer(slow_pass=True)``);
  in training it is sampled into the GRPO group like any option, its return is ``b_s``, so its advantage is learned;
* ``continuation=policy`` (``handoff_rl``): the trainer's continuations let the current steerer take every later
  decision instead of passing after one intervention, so repeated interventions and their cost are in the labels;
  ``continuation_gate=open`` runs its slow path at every later hand-off (the regime the every-hand-off row
  deploys); ``tau`` (default) gates them at the trainer's τ;
* ``pass_reads_fast=1`` (with ``slow_pass=1``): the slow path's pass logit reads the fast path's z
  (``EncoderSteerer(pass_reads_fast=True)``), so the steerer asked at every hand-off uses what its ranking-trained
  fast path knows about where a note matters;
* ``pass_bias=B`` (deployment, with ``slow_pass=1``; no retraining): B is added to the slow path's pass logit, the
  slow path's counterpart of τ; ``pass_bias=dev`` chooses B among :data:`PASS_BIAS_GRID` by F1 on the dev tasks.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from agents.steering.agent import SteeringAgent
from agents.steering.gate import sigmoid
from steer_envs.atomic import atomic_write_json
from steer_envs.data import load_tasks
from steer_envs.episodes import calibration_seed, play_episode
from steer_envs.errors import SteerEnvsError

from .base import HANDOFF_ENV, MethodContext
from .fixed_rule import BestFixedRuleOptions, build_best_fixed_rule
from .options import MethodOptionError, MethodOptions, method_option
from .simple import RandomIntervention, catalogue_options
from .steering import RLOptions, SteererOptions, trained_agent, untrained_agent

FEATURES = {"features": "handoff"}
#: τ of an always-open gate: p = σ(z − logit τ) ≈ 1 for any z the steerer produces
OPEN_GATE_TAU = 1e-12
TAU_FILE = "tau_for_coverage.json"
PASS_BIAS_FILE = "pass_bias_for_f1.json"
#: the pass-logit shifts ``pass_bias=dev`` tries on dev (nats; 0 = the trained slow path as it is)
PASS_BIAS_GRID = (0.0, 1.0, 2.0, 3.0, 4.0)


@dataclass(frozen=True)
class HandoffRandomOptions(MethodOptions):
    p: float = method_option(0.25, "intervention probability per hand-off", ge=0, le=1)


@dataclass(frozen=True)
class HandoffBestFixedRuleOptions(BestFixedRuleOptions):
    max_at: int = BestFixedRuleOptions.redefault("max_at", 8)
    dev_tasks: int = BestFixedRuleOptions.redefault("dev_tasks", 20)


@dataclass(frozen=True)
class HandoffOptions(MethodOptions):
    """The hand-off steerers' operating point and slow-path options (see the module docstring)."""

    coverage: float | None = method_option(
        None,
        "choose tau on dev so that interventions cover this share of agent turns (empty: tau as given)",
        gt=0,
        lt=1,
        deploy=True,
    )
    every: bool = method_option(False, "open the gate at every hand-off", deploy=True)
    dev_tasks: int = method_option(20, "dev tasks per benchmark that coverage and pass_bias=dev are chosen on", ge=1)
    slow_pass: bool = method_option(False, "pass is one of the slow path's choices")
    pass_prior: float = method_option(
        0.0, "the slow path's initial probability of pass (with slow_pass; 0: the steerer's)", ge=0, lt=1
    )
    pass_reads_fast: bool = method_option(False, "the slow path's pass logit reads the fast path's z (with slow_pass)")
    pass_bias: float | Literal["dev"] = method_option(
        0.0,
        "a deployment shift of the slow path's pass logit (with slow_pass), or `dev`: chosen by dev F1",
        deploy=True,
    )

    def check(self) -> None:
        needs_slow_pass = [
            name
            for name, on in (
                ("pass_prior", self.pass_prior != 0.0),
                ("pass_reads_fast", self.pass_reads_fast),
                ("pass_bias", self.pass_bias != 0.0),
            )
            if on
        ]
        if needs_slow_pass and not self.slow_pass:
            raise MethodOptionError(
                f"option(s) {', '.join(needs_slow_pass)} act on the slow path's pass, which "
                "needs slow_pass=1: add slow_pass=1 to the spec"
            )


@dataclass(frozen=True)
class HandoffZeroShotOptions(HandoffOptions, SteererOptions):
    """An untrained hand-off steerer's options."""


@dataclass(frozen=True)
class HandoffRLOptions(HandoffOptions, RLOptions):
    """The trained hand-off steerer's options: its default training budget was chosen on dev
    (docs/archive/results_handoff.md): 24 rounds x 96 states x (4 samples + pass) x 6 continuations, about 69k
    continuation rollouts."""

    bank_tasks: int = RLOptions.redefault("bank_tasks", 400)
    m: int = RLOptions.redefault("m", 24)
    k: int = RLOptions.redefault("k", 96)
    G: int = RLOptions.redefault("G", 4)
    N: int = RLOptions.redefault("N", 6)
    continuation: Literal["pass", "policy"] = method_option(
        "pass",
        "the trainer's continuations after an intervention: pass to the end, or `policy`: the current steerer "
        "takes every later decision (repeated interventions and their cost are in the labels)",
    )
    continuation_gate: Literal["tau", "open"] = method_option(
        "tau",
        "with continuation=policy: gate later decisions at the trainer's tau, or `open`: its slow path at every "
        "later hand-off",
    )

    def check(self) -> None:
        super().check()
        if self.continuation == "pass" and self.continuation_gate != "tau":
            raise MethodOptionError("continuation_gate applies to continuation=policy only; add continuation=policy")


def dev_task_ids(context: MethodContext, per_benchmark: int) -> list[str]:
    from steer_envs.data.tasks import BENCHMARKS

    return [
        t.id
        for b in (context.benchmarks or BENCHMARKS)
        for t in load_tasks(b, "dev", data_dir=context.data_dir)[:per_benchmark]
    ]


def coverage_of(env, agent: SteeringAgent, task_ids: list[str]) -> float:
    """Interventions per decision (= per agent turn) of ``agent`` on ``task_ids`` (fixed seeds per task)."""
    interventions = decisions = 0
    for task_id in task_ids:
        _, n, info = play_episode(env, agent, calibration_seed(task_id), task_id)
        interventions += int(info["interventions"])
        decisions += n
    return interventions / max(1, decisions)


def tau_for_coverage(
    env, agent: SteeringAgent, task_ids: list[str], target: float, iters: int = 12
) -> tuple[float, float]:
    """Bisection on logit τ so that the agent's coverage on ``task_ids`` is about ``target`` (coverage falls as τ
    rises). Returns (τ, the coverage it gave)."""
    lo, hi = -14.0, 14.0
    best = (agent.tau, math.inf, math.nan)
    for _ in range(iters):
        mid = (lo + hi) / 2
        agent.tau = sigmoid(mid)
        rate = coverage_of(env, agent, task_ids)
        if abs(rate - target) < best[1]:
            best = (agent.tau, abs(rate - target), rate)
        lo, hi = (mid, hi) if rate > target else (lo, mid)
    agent.tau = best[0]
    return best[0], best[2]


def dev_f1(env, agent: SteeringAgent, task_ids: list[str]) -> float:
    """Macro-over-benchmarks F1 of ``agent`` on ``task_ids`` (one fixed seed per task, as :func:`coverage_of`)."""
    by_benchmark: dict[str, list[float]] = {}
    for task_id in task_ids:
        _, _, info = play_episode(env, agent, calibration_seed(task_id), task_id)
        by_benchmark.setdefault(task_id.split("/", 1)[0], []).append(float(info["f1"]))  # ids are "benchmark/..."
    return float(np.mean([np.mean(v) for v in by_benchmark.values()]))


def _pass_bias(agent: SteeringAgent, context: MethodContext, chosen: HandoffOptions) -> None:
    """``pass_bias=B`` shifts the slow path's pass logit by B at deployment; ``pass_bias=dev`` takes the B of
    :data:`PASS_BIAS_GRID` with the highest F1 on the dev tasks (cached beside the checkpoint, as τ is)."""
    value = chosen.pass_bias
    if value == 0.0:
        return
    if not getattr(agent.steerer, "slow_pass", False):
        raise SteerEnvsError("pass_bias shifts the slow path's pass logit: the steerer needs slow_pass=1")
    if value != "dev":
        agent.steerer.pass_bias = float(value)
    else:
        path = context.checkpoint_dir() / PASS_BIAS_FILE
        per_benchmark = chosen.dev_tasks
        stored = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if stored.get("dev_tasks_per_benchmark") != per_benchmark or stored.get("grid") != list(PASS_BIAS_GRID):
            env = context.make_env(HANDOFF_ENV, split="dev", action_mode="discrete")
            scores = {}
            try:
                for bias in PASS_BIAS_GRID:
                    agent.steerer.pass_bias = bias
                    scores[f"{bias:g}"] = dev_f1(env, agent, dev_task_ids(context, per_benchmark))
            finally:
                env.close()
            best = max(scores, key=lambda shift: scores[shift])  # the first (smallest) shift wins a tie
            stored = {
                "pass_bias": float(best),
                "dev_f1": scores,
                "dev_tasks_per_benchmark": per_benchmark,
                "grid": list(PASS_BIAS_GRID),
                "split": "dev",
            }
            atomic_write_json(path, stored, sort_keys=False)
        agent.steerer.pass_bias = float(stored["pass_bias"])
    agent.run_info = {
        **getattr(agent, "run_info", {}),
        "pass_bias": agent.steerer.pass_bias,
        **({"pass_bias_chosen_on": "dev"} if value == "dev" else {}),
    }


def _operating_point(agent: SteeringAgent, context: MethodContext, chosen: HandoffOptions) -> SteeringAgent:
    """Set the agent's τ (and the slow path's pass bias) from the method's deployment options (see the module
    docstring)."""
    _pass_bias(agent, context, chosen)
    if chosen.every:
        agent.tau = OPEN_GATE_TAU
        agent.run_info = {**getattr(agent, "run_info", {}), "gate": "open at every hand-off"}
        return agent
    target = chosen.coverage
    if target is None:
        return agent
    path = context.checkpoint_dir() / TAU_FILE
    stored = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    key = f"{target:g}"
    if key not in stored:
        per_benchmark = chosen.dev_tasks
        env = context.make_env(HANDOFF_ENV, split="dev", action_mode="discrete")
        try:
            tau, achieved = tau_for_coverage(env, agent, dev_task_ids(context, per_benchmark), target)
        finally:
            env.close()
        stored[key] = {"tau": tau, "dev_coverage": achieved, "dev_tasks_per_benchmark": per_benchmark, "split": "dev"}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(stored, indent=2), encoding="utf-8")
        tmp.replace(path)
    agent.tau = float(stored[key]["tau"])
    agent.run_info = {
        **getattr(agent, "run_info", {}),
        "tau": agent.tau,
        "tau_chosen_on": "dev",
        "dev_coverage": stored[key]["dev_coverage"],
    }
    return agent


def _steerer_args(chosen: HandoffOptions) -> dict[str, Any]:
    """The hand-off steerer's arguments: its feature set, and ``slow_pass`` / ``pass_prior`` / ``pass_reads_fast``
    when the method asks for them (only then: the spec, and so the checkpoints of runs without them, stay as they
    are). :meth:`HandoffOptions.check` has made sure the last two come with ``slow_pass``."""
    args: dict[str, Any] = {**FEATURES, **({"slow_pass": True} if chosen.slow_pass else {})}
    if chosen.pass_prior:
        args["pass_prior"] = chosen.pass_prior
    if chosen.pass_reads_fast:
        args["pass_reads_fast"] = True
    return args


def _continuation_overrides(chosen: HandoffRLOptions) -> dict[str, Any]:
    """SteeringConfig's continuation fields, set only where they differ from its defaults."""
    out: dict[str, Any] = {}
    if chosen.continuation != "pass":
        out["continuation"] = chosen.continuation
    if chosen.continuation_gate != "tau":
        out["continuation_gate"] = chosen.continuation_gate
    return out


def build_handoff_zero_shot(context: MethodContext) -> SteeringAgent:
    chosen = context.options_of(HandoffZeroShotOptions)
    agent = untrained_agent(context, HANDOFF_ENV, "handoff_zero_shot", **_steerer_args(chosen))
    return _operating_point(agent, context, chosen)


def build_handoff_rl(context: MethodContext) -> SteeringAgent:
    chosen = context.options_of(HandoffRLOptions)
    agent = trained_agent(
        context,
        HANDOFF_ENV,
        "handoff_rl",
        {"env_id": HANDOFF_ENV, "backbone_args": _steerer_args(chosen), **_continuation_overrides(chosen)},
    )
    return _operating_point(agent, context, chosen)


def build_handoff_random(context: MethodContext) -> RandomIntervention:
    return RandomIntervention(catalogue_options(context, HANDOFF_ENV), context.options_of(HandoffRandomOptions).p)


def build_handoff_best_fixed_rule(context: MethodContext):
    return build_best_fixed_rule(context, HANDOFF_ENV, context.options_of(HandoffBestFixedRuleOptions))


def policy_rates(records: list[Any]) -> dict[str, float]:
    """Coverage and agent turns per task of episode records (for reports)."""
    decisions = sum(r.decisions for r in records)
    return {
        "coverage": sum(r.interventions for r in records) / max(1, decisions),
        "turns_per_task": float(np.mean([r.executor_turns for r in records])) if records else 0.0,
    }
