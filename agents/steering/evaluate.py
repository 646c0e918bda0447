"""What only the steering agent needs measured: does its fast path rank states by how much intervening matters?

Comparisons between methods (F1, paired intervals, operating points chosen on dev) all run through the one
evaluation harness, :mod:`benchmarks.harness` (``steer-envs eval`` / ``steer-envs compare``). This module keeps
the steerer-specific diagnostic: the Spearman correlation between the fast path's priority ``z`` and the measured
``q(s) = mean_j |R̄_{s,j} − b_s|`` on held-out states (no-intervention rollouts of tasks the steerer never
trained on), measured the way training measures it (``G`` slow-path samples, ``N`` continuations per branch).
It is reported two ways, because they answer different questions:

* **within task**: the mean over tasks of the Spearman among one task's states (what the paper's ranking loss,
  over pairs of states of the same task, trains directly);
* **across tasks**: the Spearman over all states pooled (what the gate needs, since one ``τ`` serves every task).

Both come with a 95% interval from resampling tasks (states of one task move together).

Usage: ``python -m agents.steering.evaluate RUN_DIR [--split test] [--tasks-per-benchmark 20] [--N 16]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from steer_envs.cli.common import add_data_dir, add_protocol_arguments
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.data import load_tasks
from steer_envs.data.tasks import BENCHMARKS

from .objectives import intervention_effect
from .rollouts import StateMeasurement, collect_state_bank, continuation_seeds, make_steering_env, measure_states
from .selection import random_subset
from .steerer import Steerer


def select_tasks(
    split: str,
    benchmarks: Sequence[str] | None = None,
    max_per_benchmark: int | None = None,
    seed: int = 0,
    data_dir=None,
) -> list[str]:
    """Task ids of ``split``, optionally a fixed random subset of at most ``max_per_benchmark`` per benchmark."""
    ids: list[str] = []
    for bench in benchmarks or BENCHMARKS:
        tasks = [t.id for t in load_tasks(bench, split, data_dir=data_dir)]
        if max_per_benchmark and len(tasks) > max_per_benchmark:
            rng = np.random.default_rng([seed, len(tasks)])
            tasks = random_subset(tasks, max_per_benchmark, rng)
        ids.extend(tasks)
    return ids


def _spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    from scipy import stats

    if len(x) < 3 or len(set(y)) < 2 or len(set(x)) < 2:
        return float("nan")
    return float(stats.spearmanr(x, y)[0])


def spearman_summary(
    z: Sequence[float] | np.ndarray,
    q: Sequence[float] | np.ndarray,
    task_of: Sequence[str],
    resamples: int = 500,
    seed: int = 0,
) -> dict[str, Any]:
    """Across-task and within-task Spearman of ``z`` against ``q`` with task-resampled 95% intervals."""
    z_all, q_all = np.asarray(z, dtype=float), np.asarray(q, dtype=float)
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, task in enumerate(task_of):
        by_task[task].append(i)
    groups = [np.asarray(v) for v in by_task.values()]
    per_task = np.array([_spearman(z_all[idx], q_all[idx]) for idx in groups])  # nan where a task cannot rank
    informative = ~np.isnan(per_task)
    rng = np.random.default_rng(seed)
    across_draws, within_draws = [], []
    for _ in range(resamples):
        picks = rng.integers(0, len(groups), size=len(groups))
        idx = np.concatenate([groups[i] for i in picks])
        across_draws.append(_spearman(z_all[idx], q_all[idx]))
        kept = per_task[picks][informative[picks]]
        within_draws.append(float(kept.mean()) if len(kept) else float("nan"))

    def interval(draws: list[float]) -> list[float]:
        clean = [d for d in draws if not math.isnan(d)]
        return [float(v) for v in np.percentile(clean, [2.5, 97.5])] if clean else [float("nan")] * 2

    return {
        "across": _spearman(z_all, q_all),
        "across_ci": interval(across_draws),
        "within": float(per_task[informative].mean()) if informative.any() else float("nan"),
        "within_ci": interval(within_draws),
        "states": int(len(z_all)),
        "tasks": len(groups),
        "tasks_within": int(informative.sum()),
        "mean_q": float(q_all.mean()) if len(q_all) else float("nan"),
    }


def fast_path_spearman(
    env,
    steerer: Steerer,
    task_ids: Sequence[str],
    G: int = 4,
    N: int = 4,
    seed: int = 11,
    action_mode: str = "discrete",
    max_states: int | None = None,
    pool: Any = None,
) -> dict[str, Any]:
    """Spearman between the fast-path priority and measured ``q(s)`` on the no-intervention states of
    ``task_ids`` (see the module docstring); continuations run on ``pool`` (None: here)."""
    bank = collect_state_bank(env, task_ids, seed, action_mode, pool=pool)
    if max_states and len(bank) > max_states:
        bank = random_subset(bank, max_states, np.random.default_rng(seed))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        z = np.concatenate(
            [
                steerer.fast_scores([s.observation for s in bank[i : i + 256]]).float().cpu().numpy()
                for i in range(0, len(bank), 256)
            ]
        )
        requests = [
            (
                state,
                [s.to_action(action_mode) for s in steerer.sample_slow(state.observation, G, gen)],
                continuation_seeds([seed, j], N),
            )
            for j, state in enumerate(bank)
        ]
    measured = measure_states(env, requests, action_mode, pool=pool)
    keep = [i for i, m in enumerate(measured) if m.usable]  # a state whose continuations all failed has no label
    q = [_effect(measured[i]) for i in keep]
    return {**spearman_summary(z[keep], q, [bank[i].task_id for i in keep], seed=seed), "G": G, "N": N}


def _effect(measurement: StateMeasurement) -> float:
    """q(s) of a usable measurement: its samples' mean return over its baseline's."""
    baseline, returns = measurement.measured()
    return intervention_effect(returns, baseline)


def main(argv: Sequence[str] | None = None) -> int:
    from .trainer import load_model

    parser = argparse.ArgumentParser(prog="python -m agents.steering.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a trained steering run folder (model.pt)")
    add_protocol_arguments(
        parser,
        include=("split",),
        defaults={"split": "dev"},
        overrides={"split": {"help": "split of the held-out states (default dev)"}},
    )
    parser.add_argument("--tasks-per-benchmark", type=int, default=20)
    parser.add_argument("--N", type=int, default=None, help="continuations per branch (default: the run's N)")
    add_data_dir(parser)
    args = parser.parse_args(argv)
    steerer, payload = load_model(args.run_dir)
    cpu_thread_default(getattr(steerer, "device", "cpu"))
    config = payload["extra"]["config"]
    env = make_steering_env(
        config["executor"],
        args.split,
        action_mode=config["action_mode"],
        data_dir=args.data_dir,
        max_turns=config["max_turns"],
        metric=config["metric"],
    )
    ids = select_tasks(args.split, max_per_benchmark=args.tasks_per_benchmark, seed=3, data_dir=args.data_dir)
    report = fast_path_spearman(
        env, steerer, ids, G=int(config["G"]), N=int(args.N or config["N"]), action_mode=config["action_mode"]
    )
    print(json.dumps(report, indent=2))
    out = Path(args.run_dir) / f"spearman_{args.split}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
