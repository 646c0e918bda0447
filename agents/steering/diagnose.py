"""Diagnostics of the fast path's target: how reliable measured ``q(s)`` is, and how well it *can* be ranked.

The F4 acceptance asks that the fast path rank held-out states by measured ``q(s)`` (Spearman ≥ 0.3). Before
blaming the learner, measure the target on the simulator, with privileged knowledge of its hidden state:

* **reliability**: Spearman between two measurements of ``q`` on the same held-out states with independent
  continuation seeds (the ceiling any predictor's Spearman against one noisy measurement is bounded by);
* **between-task share**: the part of ``q``'s variance explained by the task (the paper's ranking loss compares
  states of the same task only, so this part is never trained directly);
* **per-type means and the type ceiling**: states are typed by what a reader of the transcript could in principle
  tell apart (turn 0, an unresolved search at turn 1/2/3+, evidence in hand, a fixated entity, a rambling
  never-answer episode); a predictor that outputs the training-set mean ``q`` of a held-out state's type gives
  the Spearman reachable from that coarse a reading.

``q`` is measured two ways: over every catalogue intervention (``q_all``, the paper's ``q`` with the slow path
replaced by the whole catalogue) and for ``search_question`` alone (``q_search``; the trained slow path chooses
it almost everywhere on sim:default).

Usage: ``python -m agents.steering.diagnose [--train-tasks 200] [--rollouts 3] [--test-tasks 140] [--N 16]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from steer_envs.cli.common import add_protocol_arguments
from steer_envs.data import load_tasks
from steer_envs.data.tasks import BENCHMARKS

from .evaluate import select_tasks
from .rollouts import collect_state_bank, continuation_seeds, make_steering_env, measure_state
from .selection import random_subset

ACTION_MODE = "discrete"


@dataclass
class MeasuredState:
    """One bank state with its baseline and every catalogue intervention's mean return, for each seed set."""

    task_id: str
    turn: int
    state_type: str
    baselines: list[float]  # one per independent seed set
    returns: list[list[float]]  # [seed set][catalogue option 1..K]


def state_type(privileged: dict[str, Any], turn: int) -> str:
    """The coarse hidden-state type of a decision point (see the module docstring)."""
    if turn == 0:
        return "start"
    if privileged.get("drift") == "never_answer":
        return "ramble"
    if privileged.get("evidence_in_hand"):
        return "evidence"
    if privileged.get("fixated"):
        return "fixated"
    return f"unresolved_t{min(turn, 3)}"


def measure_bank(
    env,
    task_ids: Sequence[str],
    seed: int,
    N: int,
    seed_sets: int,
    progress: Callable[[int], None] | None = None,
    dropped: list[str] | None = None,
) -> list[MeasuredState]:
    """No-intervention rollouts of ``task_ids``; every state measured for pass and each catalogue option.

    A state is kept only when every seed set measured its baseline and every option: a mean over continuations
    that all failed is ``None`` (:class:`~agents.steering.rollouts.StateMeasurement`), not a return, and these
    diagnostics compare the same options across seed sets. The task id of each state left out is appended to
    ``dropped``."""
    base = env.unwrapped
    options = list(range(1, len(base.catalogue)))
    out = []
    for j, state in enumerate(collect_state_bank(env, task_ids, seed, ACTION_MODE)):
        base.set_state(state.env_state)
        kind = state_type(base.executor.privileged(), state.turn)
        baselines: list[float] = []
        returns: list[list[float]] = []
        for k in range(seed_sets):
            seeds = continuation_seeds([seed, j, k], N)
            m = measure_state(env, state, options, seeds, ACTION_MODE)
            if not m.usable or len(m.valid) < len(m.returns):  # a failed measurement has no q: skip the state
                break
            baseline, measured = m.measured()  # every sample measured: the returns of every option, in order
            baselines.append(baseline)
            returns.append(measured)
        else:
            out.append(MeasuredState(state.task_id, state.turn, kind, baselines, returns))
        if len(baselines) < seed_sets and dropped is not None:
            dropped.append(state.task_id)
        if progress:
            progress(1)
    return out


def q_values(states: Sequence[MeasuredState], which: str, seed_set: int = 0, option: int | None = None) -> np.ndarray:
    """``q`` per state from one seed set: mean |R̄ − b| over every option, or for the option at ``option``."""
    b = np.array([s.baselines[seed_set] for s in states])
    r = np.array([s.returns[seed_set] for s in states])
    if which == "all":
        return np.abs(r - b[:, None]).mean(axis=1)
    return np.abs(r[:, option] - b)


def between_task_share(task_ids: Sequence[str], q: np.ndarray) -> float:
    """Variance of the per-task mean of ``q`` (each state carrying its task's mean) over the variance of ``q``."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for task, value in zip(task_ids, q):
        by_task[task].append(float(value))
    means = np.array([np.mean(by_task[t]) for t in task_ids])
    return float(means.var() / q.var()) if q.var() > 0 else float("nan")


def diagnose(
    train_tasks: int = 200,
    rollouts: int = 3,
    test_tasks: int = 140,
    N: int = 16,
    executor: str = "sim:default",
    seed: int = 0,
    data_dir=None,
    progress: bool = True,
) -> dict[str, Any]:
    from scipy import stats
    from tqdm.auto import tqdm

    t0 = time.time()
    train_env = make_steering_env(executor, "train", action_mode=ACTION_MODE, data_dir=data_dir)
    test_env = make_steering_env(executor, "test", action_mode=ACTION_MODE, data_dir=data_dir)
    names = [o.name for o in test_env.unwrapped.catalogue][1:]
    search = names.index("search_question")
    pool = [t.id for t in load_tasks(None, "train", data_dir=data_dir)]
    rng = np.random.default_rng([seed, 17])
    train_ids = random_subset(pool, min(train_tasks, len(pool)), rng) * rollouts
    test_ids = select_tasks(
        "test", max_per_benchmark=test_tasks // len(BENCHMARKS) + 1, seed=seed + 3, data_dir=data_dir
    )

    # the number of states is known only once the rollouts are done: the bar counts measured states
    bar = tqdm(desc="measured states", unit="state", disable=not progress, dynamic_ncols=True)
    dropped_train: list[str] = []
    dropped_test: list[str] = []
    train = measure_bank(train_env, train_ids, seed * 1_000_003 + 101, N, 1, lambda n: bar.update(n), dropped_train)
    test = measure_bank(test_env, test_ids, seed * 1_000_003 + 202, N, 2, lambda n: bar.update(n), dropped_test)
    bar.close()

    report: dict[str, Any] = {
        "executor": executor,
        "N": N,
        "train_states": len(train),
        "test_states": len(test),
        "train_tasks": train_tasks,
        "rollouts_per_train_task": rollouts,
        "test_tasks": len(test_ids),
        "dropped_train_states": len(dropped_train),
        "dropped_test_states": len(dropped_test),
    }
    for label, which, option in (("q_all", "all", None), ("q_search", "one", search)):
        q_train = q_values(train, which, 0, option)
        q_test, q_retest = q_values(test, which, 0, option), q_values(test, which, 1, option)
        types = sorted({s.state_type for s in train} | {s.state_type for s in test})
        type_mean = {
            t: float(np.mean([q for s, q in zip(train, q_train) if s.state_type == t] or [np.nan])) for t in types
        }
        fallback = float(np.mean(q_train))
        predicted = [type_mean[s.state_type] if not np.isnan(type_mean[s.state_type]) else fallback for s in test]
        report[label] = {
            "mean_test": float(q_test.mean()),
            "reliability_spearman": float(stats.spearmanr(q_test, q_retest)[0]),
            "between_task_share_test": between_task_share([s.task_id for s in test], q_test),
            "type_ceiling_spearman": float(stats.spearmanr(predicted, q_test)[0]),
            "turn_spearman": float(stats.spearmanr([s.turn for s in test], q_test)[0]),
            "types": {
                t: {
                    "train_states": sum(s.state_type == t for s in train),
                    "test_states": sum(s.state_type == t for s in test),
                    "mean_q_train": type_mean[t],
                }
                for t in types
            },
        }
    report["per_option_mean_effect_test"] = {
        name: float(np.mean([s.returns[0][i] - s.baselines[0] for s in test])) for i, name in enumerate(names)
    }
    report["wall_s"] = time.time() - t0
    report["markdown"] = render(report)
    return report


def render(report: dict[str, Any]) -> str:
    lines = [
        f"q(s) diagnostics on {report['executor']} (N={report['N']}): {report['train_states']} train states "
        f"({report['train_tasks']} tasks x {report['rollouts_per_train_task']} rollouts), "
        f"{report['test_states']} held-out "
        f"test states ({report['test_tasks']} tasks).",
        "",
        "| target | mean q (test) | reliability (Spearman, two seed sets) | between-task share "
        "| type-ceiling Spearman | Spearman with turn |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label in ("q_all", "q_search"):
        r = report[label]
        lines.append(
            f"| {label} | {r['mean_test']:.3f} | {r['reliability_spearman']:.3f} | "
            f"{r['between_task_share_test']:.3f} | "
            f"{r['type_ceiling_spearman']:.3f} | {r['turn_spearman']:.3f} |"
        )
    lines += [
        "",
        "| state type | train states | test states | mean q_all (train) | mean q_search (train) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for t, row in report["q_all"]["types"].items():
        lines.append(
            f"| {t} | {row['train_states']} | {row['test_states']} | {row['mean_q_train']:.3f} | "
            f"{report['q_search']['types'][t]['mean_q_train']:.3f} |"
        )
    lines += [
        "",
        "Mean effect R̄ − b of each intervention on the test states: "
        + ", ".join(f"{k} {v:+.3f}" for k, v in report["per_option_mean_effect_test"].items()),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.steering.diagnose", description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-tasks", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=3, help="no-intervention rollouts per train task")
    parser.add_argument("--test-tasks", type=int, default=140)
    parser.add_argument("--N", type=int, default=16, help="continuations per branch")
    add_protocol_arguments(parser, include=("executor",))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the JSON report here")
    add_protocol_arguments(parser, include=("data_dir",))
    args = parser.parse_args(argv)
    report = diagnose(args.train_tasks, args.rollouts, args.test_tasks, args.N, args.executor, args.seed, args.data_dir)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(report["markdown"])
    print(f"\n(took {report['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
