"""Learning acceptance for the steering agent: paired evaluation, τ calibration, τ sweep, fast-path Spearman.

Everything runs through :class:`agents.base.Policy` and :func:`agents.base.run_episode`, so the benchmark
harness can reuse :func:`evaluate_policies` / :func:`paired_difference` with any policies. Methods compared on
the *same* test tasks and seeds (paired):

* ``rl_steering``: the trained steerer, deterministic gate, τ chosen on dev for ~1 intervention per task;
* ``no_supervision``: always pass;
* ``untrained``: the same architecture freshly initialised, τ calibrated the same way;
* ``random``: intervenes at each decision with the probability that gives the RL agent's interventions per
  task on dev, with a uniformly random catalogue intervention.

Usage: ``python -m agents.steering.evaluate RUN_DIR [--seeds 3] [--max-per-benchmark N] [--out FILE.json]``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from steer_envs.data import load_tasks
from steer_envs.data.tasks import BENCHMARKS

from ..base import EpisodeRecord, Policy, run_episode
from .agent import SteeringAgent
from .backbones import build_steerer
from .gate import logit, sigmoid
from .objectives import intervention_effect
from .rollouts import collect_state_bank, continuation_seeds, make_steering_env, measure_state
from .selection import random_subset
from .steerer import Steerer
from .trainer import load_model


class PassPolicy:
    """No supervision: pass at every decision point."""

    def __init__(self, action_mode: str = "text", name: str = "no_supervision") -> None:
        self.action_mode, self.name = action_mode, name

    def reset(self, seed: int | None = None) -> None:
        return None

    def act(self, observation: Any, info: dict[str, Any]) -> int | str:
        return 0 if self.action_mode == "discrete" else "pass"


class RandomRatePolicy:
    """Intervene with probability ``rate`` at each decision, choosing a catalogue intervention uniformly."""

    def __init__(self, rate: float, catalogue: Sequence[Any], action_mode: str = "text", name: str = "random", seed: int = 0) -> None:
        self.rate, self.catalogue, self.action_mode, self.name, self._seed = rate, list(catalogue), action_mode, name, seed
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng([self._seed if seed is None else seed, 0xAB])

    def act(self, observation: Any, info: dict[str, Any]) -> int | str:
        if self.rng.random() >= self.rate:
            return 0 if self.action_mode == "discrete" else "pass"
        index = int(self.rng.integers(1, len(self.catalogue)))
        if self.action_mode == "discrete":
            return index
        return self.catalogue[index].fill(str(observation["goal"]), str(observation["transcript"]))


def select_tasks(split: str, benchmarks: Sequence[str] | None = None, max_per_benchmark: int | None = None,
                 seed: int = 0, data_dir=None) -> list[str]:
    """Task ids of ``split``, optionally a fixed random subset of at most ``max_per_benchmark`` per benchmark."""
    ids: list[str] = []
    for bench in benchmarks or BENCHMARKS:
        tasks = [t.id for t in load_tasks(bench, split, data_dir=data_dir)]
        if max_per_benchmark and len(tasks) > max_per_benchmark:
            rng = np.random.default_rng([seed, len(tasks)])
            tasks = random_subset(tasks, max_per_benchmark, rng)
        ids.extend(tasks)
    return ids


def evaluate_policies(env, policies: Sequence[Policy], task_ids: Sequence[str], seeds: Sequence[int],
                      progress: Callable[[int], None] | None = None) -> dict[str, list[EpisodeRecord]]:
    """Every policy on every (task, seed) pair, with the same env seed per pair: paired records."""
    out: dict[str, list[EpisodeRecord]] = {p.name: [] for p in policies}
    for seed in seeds:
        for i, task_id in enumerate(task_ids):
            episode_seed = int(seed) * 100_003 + i
            for policy in policies:
                out[policy.name].append(run_episode(env, policy, episode_seed, task_id))
            if progress:
                progress(1)
    return out


@dataclass
class PairedDifference:
    """Mean of ``a − b`` over paired episodes, with a t interval and a paired bootstrap interval (95%)."""

    mean: float
    t_low: float
    t_high: float
    boot_low: float
    boot_high: float
    n: int


def paired_difference(a: Sequence[float], b: Sequence[float], boot: int = 2000, seed: int = 0) -> PairedDifference:
    from scipy import stats

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = len(d)
    mean = float(d.mean())
    half = float(stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, n, size=(boot, n))].mean(axis=1)
    return PairedDifference(mean, mean - half, mean + half, float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975)), n)


def summarise(records: Sequence[EpisodeRecord]) -> dict[str, float]:
    return {
        "f1": 100 * float(np.mean([r.f1 for r in records])),
        "em": 100 * float(np.mean([r.em for r in records])),
        "interventions_per_task": float(np.mean([r.interventions for r in records])),
        "executor_turns": float(np.mean([r.executor_turns for r in records])),
        "episodes": len(records),
    }


def interventions_per_task(env, policy: Policy, task_ids: Sequence[str], seed: int = 7) -> float:
    recs = evaluate_policies(env, [policy], task_ids, [seed])[policy.name]
    return float(np.mean([r.interventions for r in recs]))


def calibrate_tau(env, agent: SteeringAgent, task_ids: Sequence[str], target: float = 1.0, iters: int = 9) -> tuple[float, float]:
    """Bisection on ``logit(τ)`` so that the agent makes about ``target`` interventions per task on ``task_ids``.

    Interventions per task fall as τ rises (monotone in the deterministic gate up to trajectory effects).
    """
    lo, hi = -12.0, 12.0
    best = (agent.tau, float("inf"), float("nan"))
    for _ in range(iters):
        mid = (lo + hi) / 2
        agent.tau = sigmoid(mid)
        rate = interventions_per_task(env, agent, task_ids)
        if abs(rate - target) < best[1]:
            best = (agent.tau, abs(rate - target), rate)
        if rate > target:
            lo = mid
        else:
            hi = mid
    agent.tau = best[0]
    return best[0], best[2]


def fast_path_spearman(env, steerer: Steerer, task_ids: Sequence[str], G: int = 4, N: int = 4, seed: int = 11,
                       action_mode: str = "text", max_states: int | None = None) -> dict[str, float]:
    """Spearman between fast-path priority and measured ``q(s)`` on held-out states (no-intervention rollouts)."""
    from scipy import stats

    bank = collect_state_bank(env, task_ids, seed, action_mode)
    if max_states and len(bank) > max_states:
        rng = np.random.default_rng(seed)
        bank = random_subset(bank, max_states, rng)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        z = np.concatenate([steerer.fast_scores([s.observation for s in bank[i:i + 256]]).numpy() for i in range(0, len(bank), 256)])
    qs = []
    for j, state in enumerate(bank):
        samples = steerer.sample_slow(state.observation, G, gen)
        seeds = continuation_seeds([seed, j], N)
        m = measure_state(env, state, [s.to_action(action_mode) for s in samples], seeds, action_mode)
        qs.append(intervention_effect(m.returns, m.baseline))
    rho, p = stats.spearmanr(z, qs)
    # within-task agreement too (what the ranking loss trains directly)
    by_task: dict[str, list[int]] = defaultdict(list)
    for j, s in enumerate(bank):
        by_task[s.task_id].append(j)
    within = []
    for idx in by_task.values():
        if len(idx) >= 3 and len({qs[i] for i in idx}) > 1:
            r = stats.spearmanr([z[i] for i in idx], [qs[i] for i in idx])[0]
            if not math.isnan(r):
                within.append(r)
    return {"spearman": float(rho), "p_value": float(p), "states": len(bank), "mean_q": float(np.mean(qs)), "G": G, "N": N,
            "within_task_spearman": float(np.mean(within)) if within else float("nan"), "tasks_within": len(within)}


def _row(name: str, s: dict[str, float], diff: PairedDifference | None) -> str:
    d = "—" if diff is None else f"{100 * diff.mean:+.2f} [{100 * diff.t_low:+.2f}, {100 * diff.t_high:+.2f}]"
    return f"| {name} | {s['f1']:.2f} | {s['em']:.2f} | {s['interventions_per_task']:.2f} | {s['executor_turns']:.2f} | {d} |"


def run_acceptance(run_dir: str | Path, seeds: int = 3, max_per_benchmark: int | None = None, dev_tasks: int = 40,
                   sweep_taus: int = 7, spearman_tasks: int = 20, progress: bool = True, data_dir=None,
                   spearman_rollouts: int | None = None, sweep_span: float = 6.0) -> dict[str, Any]:
    """The whole learning acceptance for one trained run folder; returns a JSON-able report."""
    from tqdm.auto import tqdm

    torch.set_num_threads(1)
    t_start = time.time()
    steerer, payload = load_model(run_dir)
    config = payload["extra"]["config"]
    action_mode = config["action_mode"]
    executor = config["executor"]
    untrained = build_steerer(payload["kind"], steerer.options, payload["spec"])
    untrained.eval()

    dev_ids = select_tasks("dev", max_per_benchmark=dev_tasks // len(BENCHMARKS) + 1, seed=1, data_dir=data_dir)
    test_ids = select_tasks("test", max_per_benchmark=max_per_benchmark, seed=2, data_dir=data_dir)
    dev_env = make_steering_env(executor, "dev", action_mode=action_mode, data_dir=data_dir, max_turns=config["max_turns"], metric=config["metric"])
    test_env = make_steering_env(executor, "test", action_mode=action_mode, data_dir=data_dir, max_turns=config["max_turns"], metric=config["metric"])
    catalogue = test_env.unwrapped.catalogue

    rl = SteeringAgent(steerer, action_mode=action_mode, deterministic=True, greedy_slow=True, name="rl_steering")
    zero = SteeringAgent(untrained, action_mode=action_mode, deterministic=True, greedy_slow=True, name="untrained")
    tau_rl, dev_rate_rl = calibrate_tau(dev_env, rl, dev_ids)
    tau_zero, dev_rate_zero = calibrate_tau(dev_env, zero, dev_ids)
    # random: per-decision probability matching the RL agent's interventions per task on dev
    dev_decisions = evaluate_policies(dev_env, [PassPolicy(action_mode)], dev_ids, [7])["no_supervision"]
    per_decision = dev_rate_rl / max(1e-9, float(np.mean([r.decisions for r in dev_decisions])))
    random = RandomRatePolicy(min(1.0, per_decision), catalogue, action_mode)
    random_dev = interventions_per_task(dev_env, random, dev_ids)
    # the random policy's rate shrinks episodes less than steering does; one correction step on dev
    if random_dev > 0:
        random.rate = min(1.0, random.rate * dev_rate_rl / random_dev)
    baseline = PassPolicy(action_mode)
    policies = [rl, baseline, zero, random]

    bar = tqdm(total=len(test_ids) * seeds, desc="test episodes", disable=not progress, dynamic_ncols=True)
    records = evaluate_policies(test_env, policies, test_ids, list(range(seeds)), lambda n: bar.update(n))
    bar.close()

    f1 = {name: [r.f1 for r in recs] for name, recs in records.items()}
    overall = {name: summarise(recs) for name, recs in records.items()}
    diffs = {
        "rl_vs_none": paired_difference(f1["rl_steering"], f1["no_supervision"]),
        "rl_vs_untrained": paired_difference(f1["rl_steering"], f1["untrained"]),
        "rl_vs_random": paired_difference(f1["rl_steering"], f1["random"]),
        "untrained_vs_none": paired_difference(f1["untrained"], f1["no_supervision"]),
        "random_vs_none": paired_difference(f1["random"], f1["no_supervision"]),
    }
    per_bench: dict[str, dict[str, float]] = {}
    for bench in BENCHMARKS:
        per_bench[bench] = {name: 100 * float(np.mean([r.f1 for r in recs if r.benchmark == bench]))
                            for name, recs in records.items()}

    # τ sweep (no retraining) on the test tasks, first seed; the grid is centred on the dev-calibrated τ on the
    # log-odds scale (where the gate compares), so it spans frequencies around ~1 intervention per task whatever
    # the level of z the training left
    sweep = []
    base_f1 = float(np.mean([r.f1 for r in records["no_supervision"] if r.seed < 100_003]))
    grid = [sigmoid(logit(tau_rl) + d) for d in np.linspace(-sweep_span, sweep_span, sweep_taus)]
    for t in sorted(min(1 - 1e-9, max(1e-9, g)) for g in grid):
        rl.tau = float(t)
        recs = evaluate_policies(test_env, [rl], test_ids, [0])["rl_steering"]
        rate = float(np.mean([r.interventions for r in recs]))
        gain = 100 * (float(np.mean([r.f1 for r in recs])) - base_f1)
        sweep.append({"tau": float(t), "interventions_per_task": rate, "f1_gain": gain,
                      "gain_per_intervention": gain / rate if rate > 0 else float("nan")})
    rl.tau = tau_rl

    spear_ids = select_tasks("test", max_per_benchmark=spearman_tasks // len(BENCHMARKS) + 1, seed=3, data_dir=data_dir)
    # q(s) measured the way training measures it (the run's G samples and N continuations per branch)
    spearman = fast_path_spearman(test_env, steerer, spear_ids, G=int(config["G"]), N=int(spearman_rollouts or config["N"]),
                                  action_mode=action_mode)

    report = {
        "run_dir": str(run_dir), "seeds": seeds, "test_tasks": len(test_ids), "dev_tasks": len(dev_ids),
        "tau": {"rl_steering": tau_rl, "untrained": tau_zero, "dev_interventions_rl": dev_rate_rl,
                "dev_interventions_untrained": dev_rate_zero, "random_rate_per_decision": random.rate},
        "overall": overall, "per_benchmark": per_bench,
        "differences": {k: asdict(v) for k, v in diffs.items()},
        "tau_sweep": sweep, "spearman": spearman, "eval_wall_s": time.time() - t_start,
    }
    report["markdown"] = render_markdown(report)
    return report


def render_markdown(report: dict[str, Any]) -> str:
    o, d = report["overall"], report["differences"]
    diff_of = {"rl_steering": d["rl_vs_none"], "untrained": d["untrained_vs_none"], "random": d["random_vs_none"]}
    lines = [
        f"Test split, all 7 benchmarks: {report['test_tasks']} tasks x {report['seeds']} seeds (paired).",
        "",
        "| method | F1 | EM | interventions/task | executor turns | ΔF1 vs none [95% t] |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in ("no_supervision", "random", "untrained", "rl_steering"):
        diff = diff_of.get(name)
        lines.append(_row(name, o[name], PairedDifference(**diff) if diff else None))
    lines += ["", "| paired difference (F1 points) | mean | 95% t interval | 95% bootstrap |", "| --- | --- | --- | --- |"]
    for key, v in d.items():
        lines.append(f"| {key} | {100 * v['mean']:+.2f} | [{100 * v['t_low']:+.2f}, {100 * v['t_high']:+.2f}] | "
                     f"[{100 * v['boot_low']:+.2f}, {100 * v['boot_high']:+.2f}] |")
    lines += ["", "| benchmark | " + " | ".join(("no_supervision", "random", "untrained", "rl_steering")) + " |",
              "| --- | --- | --- | --- | --- |"]
    for bench, row in report["per_benchmark"].items():
        lines.append(f"| {bench} | " + " | ".join(f"{row[n]:.2f}" for n in ("no_supervision", "random", "untrained", "rl_steering")) + " |")
    lines += ["", "τ sweep (seed 0): | τ | interventions/task | ΔF1 | ΔF1 per intervention |", "| --- | --- | --- | --- |"]
    for s in report["tau_sweep"]:
        lines.append(f"| {s['tau']:.3g} | {s['interventions_per_task']:.2f} | {s['f1_gain']:+.2f} | {s['gain_per_intervention']:+.2f} |")
    sp = report["spearman"]
    lines += ["", f"Fast-path priority vs measured q(s) (G={sp.get('G', '?')}, N={sp.get('N', '?')}) on {sp['states']} held-out states: Spearman {sp['spearman']:.3f} "
              f"(p={sp['p_value']:.2g}); mean within-task Spearman {sp['within_task_spearman']:.3f} over {sp['tasks_within']} tasks."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.steering.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-per-benchmark", type=int, default=None, help="cap test tasks per benchmark (default: all)")
    parser.add_argument("--dev-tasks", type=int, default=140)
    parser.add_argument("--spearman-tasks", type=int, default=140)
    parser.add_argument("--sweep-taus", type=int, default=7)
    parser.add_argument("--spearman-rollouts", type=int, default=None,
                        help="continuations N per branch when measuring q(s) for the Spearman (default: the run's N)")
    parser.add_argument("--out", default=None, help="write the JSON report here (default RUN_DIR/acceptance.json)")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    report = run_acceptance(args.run_dir, args.seeds, args.max_per_benchmark, args.dev_tasks, args.sweep_taus,
                            args.spearman_tasks, data_dir=args.data_dir, spearman_rollouts=args.spearman_rollouts)
    out = Path(args.out) if args.out else Path(args.run_dir) / "acceptance.json"
    out.write_text(json.dumps(report, indent=2))
    (out.with_suffix(".md")).write_text(report["markdown"] + "\n")
    print(report["markdown"])
    print(f"\nreport: {out}  (evaluation took {report['eval_wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
