"""Methods for HandoffSteering-v0, the five-role pipeline supervised at its hand-offs (PAPERS.md A, "Multi-agent
variant"). They are the steering methods of the single-agent tables, handed the hand-off env and its catalogue:

* ``handoff_none``: no supervision (the reference row);
* ``handoff_random``: a random catalogue intervention at each hand-off with probability ``p`` (25% by default,
  the paper's coverage);
* ``handoff_best_fixed_rule``: one catalogue option at one hand-off index, chosen on dev (testbed rule 3);
* ``handoff_zero_shot``: the steering agent without RL (an *untrained* encoder steerer over the hand-off
  features; not a prompted LLM);
* ``handoff_rl``: the same agent trained by the unchanged steering trainer (state bank, ε-selection, G x N
  counterfactual continuations through ``fork``, ranking loss + GRPO) on the train split.

Operating points, for both steerers: ``coverage=0.25`` chooses τ on the *dev* split so that interventions cover
that share of agent turns (every agent turn hands off once, so coverage = interventions / decisions); ``every=1``
opens the gate at every hand-off (the paper's "intervening at every hand-off"); otherwise ``tau`` is used as given.

The every-hand-off regime (issue 21, step 4). The paper's action space is pass ∪ A_int at *every* decision, but the
slow path of the default steerer has no pass: with the gate open it must intervene at each hand-off. Two options,
off by default (earlier labels, checkpoints and outputs unchanged):

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
from typing import Any

import numpy as np

from agents.steering.agent import SteeringAgent
from agents.steering.gate import sigmoid
from steer_envs.atomic import atomic_write_json
from steer_envs.data import load_tasks
from steer_envs.episodes import calibration_seed, play_episode
from steer_envs.errors import SteerEnvsError

from .base import HANDOFF_DEPLOY_OPTIONS, HANDOFF_ENV, MethodContext
from .fixed_rule import build_best_fixed_rule
from .simple import RandomIntervention, catalogue_options
from .steering import trained_agent, untrained_agent

FEATURES = {"features": "handoff"}
#: τ of an always-open gate: p = σ(z − logit τ) ≈ 1 for any z the steerer produces
OPEN_GATE_TAU = 1e-12
TAU_FILE = "tau_for_coverage.json"
PASS_BIAS_FILE = "pass_bias_for_f1.json"
#: the pass-logit shifts ``pass_bias=dev`` tries on dev (nats; 0 = the trained slow path as it is)
PASS_BIAS_GRID = (0.0, 1.0, 2.0, 3.0, 4.0)
DEPLOY_OPTIONS = HANDOFF_DEPLOY_OPTIONS


def dev_task_ids(context: MethodContext, per_benchmark: int) -> list[str]:
    from steer_envs.data.tasks import BENCHMARKS

    return [t.id for b in (context.benchmarks or BENCHMARKS) for t in load_tasks(b, "dev", data_dir=context.data_dir)[:per_benchmark]]


def coverage_of(env, agent: SteeringAgent, task_ids: list[str]) -> float:
    """Interventions per decision (= per agent turn) of ``agent`` on ``task_ids`` (fixed seeds per task)."""
    interventions = decisions = 0
    for task_id in task_ids:
        _, n, info = play_episode(env, agent, calibration_seed(task_id), task_id)
        interventions += int(info["interventions"])
        decisions += n
    return interventions / max(1, decisions)


def tau_for_coverage(env, agent: SteeringAgent, task_ids: list[str], target: float, iters: int = 12) -> tuple[float, float]:
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


def _pass_bias(agent: SteeringAgent, context: MethodContext) -> None:
    """``pass_bias=B`` shifts the slow path's pass logit by B at deployment; ``pass_bias=dev`` takes the B of
    :data:`PASS_BIAS_GRID` with the highest F1 on the dev tasks (cached beside the checkpoint, as τ is)."""
    value = context.options.get("pass_bias", "")
    if value in ("", "0"):
        return
    if not getattr(agent.steerer, "slow_pass", False):
        raise SteerEnvsError("pass_bias shifts the slow path's pass logit: the steerer needs slow_pass=1")
    if value != "dev":
        agent.steerer.pass_bias = context.option("pass_bias", 0.0, float)
    else:
        path = context.checkpoint_dir() / PASS_BIAS_FILE
        per_benchmark = context.option("dev_tasks", 20, int)
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
            best = max(scores, key=scores.get)  # the first (smallest) shift wins a tie
            stored = {"pass_bias": float(best), "dev_f1": scores, "dev_tasks_per_benchmark": per_benchmark,
                      "grid": list(PASS_BIAS_GRID), "split": "dev"}
            atomic_write_json(path, stored, sort_keys=False)
        agent.steerer.pass_bias = float(stored["pass_bias"])
    agent.run_info = {**getattr(agent, "run_info", {}), "pass_bias": agent.steerer.pass_bias,
                      **({"pass_bias_chosen_on": "dev"} if value == "dev" else {})}


def _operating_point(agent: SteeringAgent, context: MethodContext) -> SteeringAgent:
    """Set the agent's τ (and the slow path's pass bias) from the method's deployment options (see the module
    docstring)."""
    _pass_bias(agent, context)
    if context.option("every", 0, int):
        agent.tau = OPEN_GATE_TAU
        agent.run_info = {**getattr(agent, "run_info", {}), "gate": "open at every hand-off"}
        return agent
    target = context.option("coverage", None, float) if context.options.get("coverage", "") != "" else None
    if target is None:
        return agent
    if not 0.0 < target < 1.0:
        raise SteerEnvsError(f"coverage must be a share of agent turns in (0, 1), got {target}")
    path = context.checkpoint_dir() / TAU_FILE
    chosen = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    key = f"{target:g}"
    if key not in chosen:
        per_benchmark = context.option("dev_tasks", 20, int)
        env = context.make_env(HANDOFF_ENV, split="dev", action_mode="discrete")
        try:
            tau, achieved = tau_for_coverage(env, agent, dev_task_ids(context, per_benchmark), target)
        finally:
            env.close()
        chosen[key] = {"tau": tau, "dev_coverage": achieved, "dev_tasks_per_benchmark": per_benchmark, "split": "dev"}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(chosen, indent=2), encoding="utf-8")
        tmp.replace(path)
    agent.tau = float(chosen[key]["tau"])
    agent.run_info = {**getattr(agent, "run_info", {}), "tau": agent.tau, "tau_chosen_on": "dev",
                      "dev_coverage": chosen[key]["dev_coverage"]}
    return agent


def _steerer_args(context: MethodContext) -> dict[str, Any]:
    """The hand-off steerer's arguments: its feature set, and ``slow_pass`` / ``pass_prior`` / ``pass_reads_fast``
    when the method asks for them (only then: the spec, and so checkpoints of earlier runs, stay as they were)."""
    args = {**FEATURES, **({"slow_pass": True} if context.option("slow_pass", 0, int) else {})}
    prior = context.option("pass_prior", 0.0, float)
    if prior:
        if "slow_pass" not in args:
            raise SteerEnvsError("pass_prior sets the slow path's initial probability of pass: add slow_pass=1")
        args["pass_prior"] = prior
    if context.option("pass_reads_fast", 0, int):
        if "slow_pass" not in args:
            raise SteerEnvsError("pass_reads_fast makes the slow path's pass read the fast path's z: add slow_pass=1")
        args["pass_reads_fast"] = True
    return args


def _continuation_overrides(context: MethodContext) -> dict[str, Any]:
    continuation = context.option("continuation", "pass", str)
    gate = context.option("continuation_gate", "tau", str)
    if continuation not in ("pass", "policy") or gate not in ("tau", "open"):
        raise SteerEnvsError(f"continuation must be 'pass' or 'policy' and continuation_gate 'tau' or 'open', got "
                             f"continuation={continuation!r}, continuation_gate={gate!r}")
    if continuation == "pass" and gate != "tau":
        raise SteerEnvsError("continuation_gate applies to continuation=policy only; add continuation=policy")
    out: dict[str, Any] = {}
    if continuation != "pass":
        out["continuation"] = continuation
    if gate != "tau":
        out["continuation_gate"] = gate
    return out


def build_handoff_zero_shot(context: MethodContext) -> SteeringAgent:
    return _operating_point(untrained_agent(context, HANDOFF_ENV, "handoff_zero_shot", **_steerer_args(context)), context)


def build_handoff_rl(context: MethodContext) -> SteeringAgent:
    agent = trained_agent(context, HANDOFF_ENV, "handoff_rl",
                          {"env_id": HANDOFF_ENV, "backbone_args": _steerer_args(context), **_continuation_overrides(context)})
    return _operating_point(agent, context)


def build_handoff_random(context: MethodContext) -> RandomIntervention:
    return RandomIntervention(catalogue_options(context, HANDOFF_ENV), context.option("p", 0.25, float))


def build_handoff_best_fixed_rule(context: MethodContext):
    return build_best_fixed_rule(context, HANDOFF_ENV)


def handoff_train_options() -> dict[str, str]:
    """The hand-off steerer's default training budget, chosen on dev (docs/results_handoff.md): 24 rounds x 96 states
    x (4 samples + pass) x 6 continuations, about 69k continuation rollouts."""
    from .steering import train_options

    return {**train_options(), "bank_tasks": "400", "m": "24", "k": "96", "G": "4", "N": "6"}


def policy_rates(records: list[Any]) -> dict[str, float]:
    """Coverage and agent turns per task of episode records (for reports)."""
    decisions = sum(r.decisions for r in records)
    return {"coverage": sum(r.interventions for r in records) / max(1, decisions),
            "turns_per_task": float(np.mean([r.executor_turns for r in records])) if records else 0.0}
