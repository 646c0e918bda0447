"""The hand-off table (PAPERS.md A, "Multi-agent variant"): ``python -m benchmarks.handoff_results``.

1. Calibration: the simulated pipeline without supervision on the split, per benchmark: F1, agent turns per task,
   the share of episodes in which the verifier rejected a right answer at least once (over-rejection), and how
   often the pipeline ends without an answer.
2. Every method through the one harness (``benchmarks.harness.evaluate``), in one run folder, on the same tasks and
   seeds: no supervision; zero-shot steering at the coverage (τ chosen on dev); zero-shot forced at every hand-off;
   random at the same coverage; the best fixed rule (chosen on dev); RL steering at the coverage and at every
   hand-off, each trained with every ``--train-seeds`` seed.
3. The table: F1 (macro over benchmarks), the paired gain over no supervision with a 95% interval (tasks resampled
   within benchmarks, seeds averaged per task; for RL rows the training seeds are resampled too), agent turns per
   task, coverage (interventions per agent turn); then RL at the coverage against zero-shot, random and the best
   fixed rule, paired the same way. Setting card on top.

Writes ``OUT/results_handoff.md`` and ``OUT/results_handoff.json``; the run folder is ``OUT`` (resumable).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.failures import episode_failed

from .harness.config import EvalConfig, episode_seed
from .harness.records import EpisodeLog, EpisodeRecord
from .harness.runfolder import RunFolder
from .harness.runner import evaluate
from .harness.stats import _per_task, macro_mean

RESAMPLES = 2000


def method_specs(coverage: float, train_seeds: Sequence[int]) -> dict[str, list[str]]:
    """Row name -> the method labels it averages (one per training seed for RL)."""
    c = f"{coverage:g}"
    return {
        "no supervision": ["handoff_none"],
        f"zero-shot steering, {coverage:.0%} coverage": [f"handoff_zero_shot:coverage={c}"],
        "zero-shot steering, every hand-off (forced)": ["handoff_zero_shot:every=1"],
        f"random, {coverage:.0%} coverage": [f"handoff_random:p={c}"],
        "best fixed rule (chosen on dev)": ["handoff_best_fixed_rule"],
        f"RL steering, {coverage:.0%} coverage": [f"handoff_rl:coverage={c},seed={s}" for s in train_seeds],
        "RL steering, every hand-off": [f"handoff_rl:every=1,seed={s}" for s in train_seeds],
    }


# -- calibration ---------------------------------------------------------------------------------------------------
def calibrate(config: EvalConfig) -> dict[str, Any]:
    """The unsupervised pipeline on the run's tasks and seeds (the same env seeds the harness uses)."""
    import gymnasium as gym

    import steer_envs  # noqa: F401

    tasks = config.tasks()
    env = gym.make("steer_envs/HandoffSteering-v0", executor=config.executor, split=config.split,
                   max_turns=config.max_turns, task_ids=[t.id for t in tasks], data_dir=config.data_dir)
    rows: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    by_role: dict[str, list[int]] = defaultdict(list)
    failed = 0
    for seed_index in range(config.seeds):
        for task in tasks:
            env.reset(seed=episode_seed(task.id, seed_index), options={"task_id": task.id})
            terminated = truncated = False
            while not (terminated or truncated):  # a truncation (a service failure) ends the episode too
                _, _, terminated, truncated, info = env.step(0)
            if episode_failed(info):  # no outcome: left out of the calibration, counted
                failed += 1
                continue
            pv = info["privileged"]
            rows[task.benchmark].append((info["f1"], info["agent_turns"], float(pv["right_answer_rejected"]),
                                         float(info["answer"] in (None, "insufficient evidence")), float(pv["verifier_strict"])))
            for role, n in info["turns_by_role"].items():
                by_role[role].append(n)
    env.close()
    per_bench = {b: dict(zip(("f1", "agent_turns", "over_rejection", "no_answer", "strict_verifier"),
                             (100 * float(np.mean([r[0] for r in v])), *[float(np.mean([r[i] for r in v])) for i in range(1, 5)])))
                 for b, v in rows.items()}
    every = [r for v in rows.values() for r in v]
    return {
        "per_benchmark": per_bench,
        "f1_macro": float(np.mean([v["f1"] for v in per_bench.values()])),
        "agent_turns": float(np.mean([r[1] for r in every])),
        "over_rejection": float(np.mean([r[2] for r in every])),
        "no_answer": float(np.mean([r[3] for r in every])),
        "turns_by_role": {r: float(np.mean(v)) for r, v in by_role.items()},
        "episodes": len(every),
        "failed_episodes": failed,
    }


# -- aggregation over training seeds ---------------------------------------------------------------------------------
def _task_means(records: Sequence[EpisodeRecord], benchmarks: Sequence[str]) -> dict[str, dict[str, float]]:
    """benchmark -> task -> mean F1 (x100) over evaluation seeds."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for task, (bench, value) in _per_task(records, "f1").items():
        out[bench][task] = 100.0 * value
    return {b: out[b] for b in benchmarks if b in out}


def paired_interval(rows_a: list[list[EpisodeRecord]], rows_b: list[list[EpisodeRecord]], benchmarks: Sequence[str],
                    seed: int = 0) -> dict[str, float]:
    """Mean of (a − b) in F1 points, macro over benchmarks, with a 95% bootstrap interval that resamples tasks
    within benchmarks and, where a side has several training seeds, those seeds as well."""
    a = [_task_means(r, benchmarks) for r in rows_a]
    b = [_task_means(r, benchmarks) for r in rows_b]
    benches = [x for x in benchmarks if x in a[0]]
    tasks = {x: sorted(a[0][x]) for x in benches}
    A = {x: np.array([[m[x][t] for t in tasks[x]] for m in a]) for x in benches}  # seeds x tasks
    B = {x: np.array([[m[x][t] for t in tasks[x]] for m in b]) for x in benches}
    point = float(np.mean([A[x].mean() - B[x].mean() for x in benches]))
    rng = np.random.default_rng(seed)
    boots = np.zeros(RESAMPLES)
    for x in benches:
        n = len(tasks[x])
        ti = rng.integers(0, n, size=(RESAMPLES, n))
        sa = rng.integers(0, A[x].shape[0], size=(RESAMPLES, A[x].shape[0]))
        sb = rng.integers(0, B[x].shape[0], size=(RESAMPLES, B[x].shape[0]))
        ma = np.array([A[x][sa[i]][:, ti[i]].mean() for i in range(RESAMPLES)])
        mb = np.array([B[x][sb[i]][:, ti[i]].mean() for i in range(RESAMPLES)])
        boots += (ma - mb) / len(benches)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return {"mean": point, "low": float(lo), "high": float(hi)}


def row_summary(rows: list[list[EpisodeRecord]], benchmarks: Sequence[str]) -> dict[str, Any]:
    every = [r for seed_rows in rows for r in seed_rows]
    f1 = [100 * macro_mean(r, benchmarks) for r in rows]
    decisions = sum(r.decisions for r in every)
    return {"f1": float(np.mean(f1)), "f1_by_training_seed": f1, "agent_turns": float(np.mean([r.executor_turns for r in every])),
            "coverage": sum(r.interventions for r in every) / max(1, decisions),
            "interventions": float(np.mean([r.interventions for r in every])), "training_seeds": len(rows)}


# -- the card ----------------------------------------------------------------------------------------------------------
def setting_card(config: EvalConfig, coverage: float, train_seeds: Sequence[int]) -> dict[str, Any]:
    from steer_envs.data.corpus import DEFAULT_CORPUS
    from steer_envs.executors.pipeline import PROFILE_DIR
    from steer_envs.paths import file_fingerprint, resolve_data_dir

    data = resolve_data_dir(config.data_dir)
    profile = config.executor.partition(":")[2] or "default"
    profile_path = Path(profile) if profile.endswith(".json") else PROFILE_DIR / f"{profile}.json"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                                cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "env": "steer_envs/HandoffSteering-v0", "corpus": f"{DEFAULT_CORPUS} sha256:{file_fingerprint(data / DEFAULT_CORPUS)}",
        "retriever": "bm25s", "k": 3, "executor": config.executor,
        "profile": f"{profile_path.name} sha256:{hashlib.sha256(profile_path.read_bytes()).hexdigest()[:16]}",
        "split": config.split, "tasks": len(config.tasks()), "limit_per_benchmark": config.limit, "eval_seeds": config.seeds,
        "training_seeds": list(train_seeds), "max_agent_turns": config.max_turns, "coverage": coverage, "commit": commit,
        "benchmarks": list(config.benchmarks),
    }


def render(report: dict[str, Any]) -> str:
    card, cal = report["card"], report["calibration"]
    lines = ["Setting card: " + "; ".join(f"{k} `{v}`" for k, v in card.items()), "",
             f"**Calibration** (no supervision, {cal['episodes']} episodes): F1 {cal['f1_macro']:.2f} (macro over "
             f"benchmarks), {cal['agent_turns']:.2f} agent turns per task, over-rejection (a right answer rejected by "
             f"the verifier at least once) in {100 * cal['over_rejection']:.1f}% of episodes, no answer in "
             f"{100 * cal['no_answer']:.1f}%.", "",
             "| benchmark | F1 | agent turns | over-rejection | no answer |", "| --- | --- | --- | --- | --- |"]
    for b, v in cal["per_benchmark"].items():
        lines.append(f"| {b} | {v['f1']:.1f} | {v['agent_turns']:.2f} | {100 * v['over_rejection']:.1f}% | {100 * v['no_answer']:.1f}% |")
    lines += ["", "Turns per task by role: " + ", ".join(f"{r} {n:.2f}" for r, n in cal["turns_by_role"].items()), "",
              "| method | F1 | ΔF1 vs none [95%] | agent turns / task | coverage | interventions / task |",
              "| --- | --- | --- | --- | --- | --- |"]
    for name, row in report["rows"].items():
        gain = row.get("gain")
        g = "—" if gain is None else f"{gain['mean']:+.2f} [{gain['low']:+.2f}, {gain['high']:+.2f}]"
        seeds = f" ({row['training_seeds']} training seeds)" if row["training_seeds"] > 1 else ""
        lines.append(f"| {name}{seeds} | {row['f1']:.2f} | {g} | {row['agent_turns']:.2f} | {100 * row['coverage']:.1f}% | "
                     f"{row['interventions']:.2f} |")
    lines += ["", "| RL steering at the coverage vs | ΔF1 [95%] |", "| --- | --- |"]
    for name, d in report["comparisons"].items():
        lines.append(f"| {name} | {d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}] |")
    return "\n".join(lines) + "\n"


def run(out: str | Path, split: str = "test", limit: int = 40, seeds: int = 3, train_seeds: Sequence[int] = (0, 1, 2),
        coverage: float = 0.25, max_turns: int = 30, executor: str = "sim:default", train_options: str = "",
        progress: bool = False) -> dict[str, Any]:
    from steer_envs.data.tasks import BENCHMARKS

    start = time.time()
    config = EvalConfig(executor=executor, benchmarks=tuple(BENCHMARKS), split=split, seeds=seeds, limit=limit, max_turns=max_turns)
    folder = RunFolder(out, config)
    config = folder.config
    specs = method_specs(coverage, train_seeds)
    if train_options:
        specs = {k: [f"{s},{train_options}" if s.startswith("handoff_rl") else s for s in v] for k, v in specs.items()}
    records: dict[str, list[list[EpisodeRecord]]] = {}
    for name, labels in specs.items():
        records[name] = []
        for spec in labels:
            outcome = evaluate(folder, spec, progress=progress)
            records[name].append(EpisodeLog(folder.episodes_path(outcome.label)).records)
    benchmarks = list(config.benchmarks)
    reference = records["no supervision"]
    rows = {}
    for name, recs in records.items():
        rows[name] = row_summary(recs, benchmarks)
        rows[name]["labels"] = specs[name]
        if name != "no supervision":
            rows[name]["gain"] = paired_interval(recs, reference, benchmarks)
    rl_name = f"RL steering, {coverage:.0%} coverage"
    comparisons = {name: paired_interval(records[rl_name], records[name], benchmarks)
                   for name in (f"zero-shot steering, {coverage:.0%} coverage", f"random, {coverage:.0%} coverage",
                                "best fixed rule (chosen on dev)")}
    report = {"card": setting_card(config, coverage, train_seeds), "calibration": calibrate(config), "rows": rows,
              "comparisons": comparisons, "wall_s": round(time.time() - start, 1)}
    Path(out, "results_handoff.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    Path(out, "results_handoff.md").write_text(render(report), encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.handoff_results", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/handoff_results")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=40, help="first N tasks of each benchmark (0: all)")
    parser.add_argument("--seeds", type=int, default=3, help="evaluation seeds per task")
    parser.add_argument("--train-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--coverage", type=float, default=0.25)
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--executor", default="sim:default")
    parser.add_argument("--train-options", default="", help="extra handoff_rl options, e.g. m=8,k=32")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    cpu_thread_default()
    report = run(args.out, args.split, args.limit, args.seeds, args.train_seeds, args.coverage, args.max_turns,
                 args.executor, args.train_options, args.progress)
    print(render(report))
    print(f"written to {args.out}/results_handoff.md ({report['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
