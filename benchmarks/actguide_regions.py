"""ACTGUIDE-RL against zero RL on each task region (in-region / barrier / out of reach), unguided evaluation.

The regions come from ``steer-envs barrier --regions`` run on the *base* policy every method starts from
(``agents/actguide/regions.py``), on the same evaluation tasks. Each trained policy is then evaluated without any
hint, ``--rollouts`` episodes per task and training seed (seed labels ``seed * 100 + r``, the protocol of
``docs/results_actguide.md``, so a rerun reads its JSONL logs back instead of playing again), and the page reports
per region: success (EM, %), unguided Pass@K of the base and of each method (did the skill transfer to tasks the
base could not solve by itself?), and the paired gain of ACTGUIDE-RL over zero RL with the harness's stratified
bootstrap interval (``benchmarks.harness.stats.paired_gain``: one harness computes every interval).

Usage (the run folders of ``python -m benchmarks.harness.actguide_doc`` or of the same train commands)::

    python -m benchmarks.actguide_regions --runs RUNS --regions RUNS/regions_test/regions.json \
        --setting RUNS/setting.json --doc docs/results_actguide_regions.md

``--pool-runs POOL --pool-setting POOL/setting.json`` adds the comparison trained *where the barrier is* (issue 22,
step 3): the same two methods from the same base, on the RL pool kept to the base's barrier and in-region tasks
(``pool_regions`` of ``ActGuideConfig``, from ``steer-envs barrier --regions --split train`` on the pool's own
tasks), evaluated on the same tasks and seeds, with where each training's rollout budget went.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from steer_envs.atomic import atomic_write_text
from steer_envs.cli.common import add_protocol_arguments
from steer_envs.episodes import EpisodeLog, EpisodeRecord
from steer_envs.errors import SteerEnvsError

from benchmarks.harness.provenance import code_version
from benchmarks.harness.setting import corpus_card
from benchmarks.harness.stats import Interval, macro_mean, paired_gain

REGION_ORDER = ("barrier", "in_region", "out_of_reach")
REGION_LABEL = {"barrier": "barrier", "in_region": "in-region", "out_of_reach": "out of reach"}


def evaluate_model(model_dir: Path, label: str, env, task_ids: Sequence[str], rollouts: int, seed: int,
                   log_dir: Path) -> list[EpisodeRecord]:
    """Unguided episodes of one trained learner on ``task_ids``, cached in ``log_dir/label.jsonl``."""
    from agents.actguide.evaluate import evaluate
    from agents.actguide.trainer import load_learner

    if not (model_dir / "model.pt").is_file():
        raise SteerEnvsError(f"{model_dir} has no trained model.pt; train it first (see the module docstring)")
    log = EpisodeLog(log_dir / f"{label}.jsonl")
    expected = {(t, seed * 100 + r) for t in task_ids for r in range(rollouts)}
    have = {(r.task_id, r.seed) for r in log.records}
    todo = [t for t in task_ids if any((t, seed * 100 + r) not in have for r in range(rollouts))]
    if todo:
        learner, _ = load_learner(model_dir)
        for episode in evaluate(learner, env, todo, rollouts, label, seed=seed, seed_offset=seed * 100):
            log.append(episode)
    return [r for r in log.records if (r.task_id, r.seed) in expected]


def pass_at_k(records: Sequence[EpisodeRecord], tasks: set[str]) -> float:
    """Unguided Pass@K x100: per (task, training seed) whether any of its K finished rollouts succeeded, averaged
    over the tasks of each benchmark, then over benchmarks (the suite's macro average, like :func:`success`)."""
    hit: dict[tuple[str, int], bool] = defaultdict(bool)
    bench: dict[str, str] = {}
    for r in records:
        if r.task_id in tasks and not r.failed:
            hit[(r.task_id, r.seed // 100)] |= r.em > 0
            bench[r.task_id] = r.benchmark
    by_bench: dict[str, list[float]] = defaultdict(list)
    for (task, _), value in hit.items():
        by_bench[bench[task]].append(float(value))
    return 100 * float(np.mean([np.mean(v) for v in by_bench.values()])) if by_bench else float("nan")


def success(records: Sequence[EpisodeRecord], tasks: set[str]) -> float:
    """Unguided success (EM) x100 on ``tasks``: the harness's macro mean (seeds per task, tasks per benchmark,
    then benchmarks), so it agrees with the paired gain's mean."""
    sub = [r for r in records if r.task_id in tasks]
    return 100 * macro_mean(sub, sorted({r.benchmark for r in sub}), attr="em") if sub else float("nan")


def run_folder(root: Path, variant: str, seed: int) -> Path:
    """Where a variant's training run of ``seed`` lives under a run folder (``ROOT/runs/VARIANT/seedN``): one home for
    the layout every generator and page of the ACTGUIDE results reads."""
    return root / "runs" / variant / f"seed{seed}"


def episode_folder(split: str) -> str:
    """Where a run folder keeps the episodes of one evaluation split (test's keeps its first name)."""
    return "episodes_regions" if split == "test" else f"episodes_regions_{split}"


def _relabel(records: Sequence[EpisodeRecord], method: str) -> list[EpisodeRecord]:
    return [replace(r, method=method) for r in records]


def region_gain(method: Sequence[EpisodeRecord], reference: Sequence[EpisodeRecord], tasks: set[str]) -> Interval | None:
    m = [r for r in method if r.task_id in tasks]
    ref = [r for r in reference if r.task_id in tasks]
    if not m or not ref:
        return None
    present = sorted({r.benchmark for r in m})
    return paired_gain(_relabel(m, "method"), _relabel(ref, "reference"), present, attr="em")[1]


def fmt_gain(iv: Interval | None) -> str:
    return "–" if iv is None else f"{iv.mean:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}]"


def region_table(base: Sequence[EpisodeRecord], zero_rl: Sequence[EpisodeRecord], actguide: Sequence[EpisodeRecord],
                 groups: dict[str, set[str]]) -> list[str]:
    """One row per region: success of the base and both methods, the paired gain, and unguided Pass@8 of each."""
    lines = ["| Region | tasks | base success | zero RL | ACTGUIDE-RL | ACTGUIDE-RL − zero RL | base Pass@8 | "
             "zero RL Pass@8 | ACTGUIDE-RL Pass@8 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in REGION_ORDER:
        tasks = groups[name]
        lines.append(f"| {REGION_LABEL[name]} | {len(tasks)} | {success(base, tasks):.1f} | {success(zero_rl, tasks):.1f} | "
                     f"{success(actguide, tasks):.1f} | {fmt_gain(region_gain(actguide, zero_rl, tasks))} | "
                     f"{pass_at_k(base, tasks):.1f} | {pass_at_k(zero_rl, tasks):.1f} | {pass_at_k(actguide, tasks):.1f} |")
    return lines


def training_log(run: Path) -> list[dict]:
    """A training run's log rows (``agents.trainer_base.LOG_FILE``), or an error naming the run: a page that reads
    the budget of a run that never trained would otherwise show an empty row."""
    from agents.steering.checkpoint import read_jsonl
    from agents.trainer_base import LOG_FILE

    if not (run / LOG_FILE).is_file():
        raise SteerEnvsError(f"{run} has no {LOG_FILE}; train it first (see the module docstring)")
    return read_jsonl(run / LOG_FILE)


def pool_gain_lines(pooled: dict[str, list[EpisodeRecord]], whole: dict[str, list[EpisodeRecord]],
                    groups: dict[str, set[str]]) -> list[str]:
    """Per region, each method trained on the barrier pool against the same method trained on the whole pool."""
    lines = ["| Region | zero RL: pool − all | ACTGUIDE-RL: pool − all |", "|---|---:|---:|"]
    for name in REGION_ORDER:
        lines.append(f"| {REGION_LABEL[name]} | {fmt_gain(region_gain(pooled['zero_rl'], whole['zero_rl'], groups[name]))} | "
                     f"{fmt_gain(region_gain(pooled['actguide'], whole['actguide'], groups[name]))} |")
    return lines


def budget_lines(rows: Sequence[list[str]]) -> list[str]:
    """The table of :func:`budget_row` rows."""
    return ["| Training | method | iterations | unguided rollouts | probes | guided | rescued / guided groups |",
            "|---|---|---:|---:|---:|---:|---:|", *("| " + " | ".join(row) + " |" for row in rows)]


def benchmark_lines(regions: dict[str, str], base: Sequence[EpisodeRecord]) -> list[str]:
    """Tasks per benchmark and region (a task's benchmark read from the base's episodes on it)."""
    per_bench: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    bench_of = {r.task_id: r.benchmark for r in base}
    for t, g in regions.items():
        if t in bench_of:
            per_bench[bench_of[t]][g] += 1
    return ["| Benchmark | in-region | barrier | out of reach |", "|---|---:|---:|---:|",
            *(f"| {b} | {per_bench[b]['in_region']} | {per_bench[b]['barrier']} | {per_bench[b]['out_of_reach']} |"
              for b in sorted(per_bench))]


def budget_row(training: str, method: str, folders: Sequence[Path]) -> list[str]:
    """Means over a method's run folders of its log: iterations, the shares of the rollout budget, rescue rate."""
    rows = []
    for folder in folders:
        log = training_log(folder)
        used = max(1, sum(r["rollouts"] for r in log))
        probes = sum(r["probe_rollouts"] for r in log)
        guided = sum(r["guided_groups"] for r in log) * int(json.loads((folder / "config.json").read_text())["config"]["group_size"])
        rows.append((len(log), (used - probes - guided) / used, probes / used, guided / used,
                     sum(r["rescued_groups"] for r in log) / max(1, sum(r["guided_groups"] for r in log))))
    m = np.mean(rows, axis=0)
    return [training, method, f"{m[0]:.0f}", f"{100 * m[1]:.0f}%", f"{100 * m[2]:.0f}%", f"{100 * m[3]:.0f}%",
            f"{100 * m[4]:.0f}%" if m[3] else "–"]


def page(regions: dict[str, str], records: dict[str, list[EpisodeRecord]], seeds: int, rollouts: int,
         command: str, seconds: float, split: str = "test", setting: dict | None = None,
         pooled: dict | None = None) -> str:
    setting = setting or {}
    corpus = corpus_card(setting.get("data_dir"))
    groups = {name: {t for t, g in regions.items() if g == name} for name in REGION_ORDER}
    lines = ["# ACTGUIDE-RL by task region (unguided evaluation)", "",
             "Generated by `python -m benchmarks.actguide_regions` (issue 22, steps 1 and 3). Back to "
             "[the ACTGUIDE-RL results](results_actguide.md).", "",
             "Regions of the base policy (`steer-envs barrier --regions`, agents/actguide/regions.py): in-region = "
             "the base finds a reward by itself (unguided Pass@32 > 0); barrier = it does not, and a hint of at most 4 "
             "reference actions gives Pass@8 > 0; out of reach = neither. Every method starts from that base and is "
             f"evaluated without a hint, {rollouts} rollouts per task and training seed, {seeds} training seeds. "
             "Success and Pass@8 are macro means over benchmarks (the suite's one average); gains are paired, tasks "
             "resampled within benchmarks (the harness's bootstrap), EM points.", "",
             f"Command (resumable): `{command}` ({seconds:.0f} s this run).", "",
             f"Setting card: split {split}, {len(regions)} tasks, code `{code_version()}`, corpus "
             f"`{corpus[0]}` ({corpus[1]}), training setting `{json.dumps(setting, sort_keys=True)}`.", "",
             *region_table(records["base"], records["zero_rl"], records["actguide"], groups)]
    if pooled:
        lines += ["", "## Trained where the barrier is", "",
                  "The same comparison, both methods trained on the RL pool kept to its barrier and in-region tasks "
                  "(`pool_regions`: the base's regions of the pool's own train tasks, `steer-envs barrier --regions "
                  "--split train`), so no rollout goes to a task the base cannot reach even with a hint. Same base, "
                  "budget, evaluation tasks and rollout seeds as above.", "",
                  f"Training setting `{json.dumps(pooled['setting'], sort_keys=True)}`; pool: {pooled['pool']}.", "",
                  *region_table(records["base"], pooled["zero_rl"], pooled["actguide"], groups), "",
                  "Pooled against unfiltered training (paired, same evaluation episodes' seeds):", "",
                  *pool_gain_lines(pooled, records, groups), "",
                  "Where the budget went (training logs, means over training seeds):", "", *budget_lines(pooled["budget"])]
    lines += ["", "Tasks per benchmark:", "", *benchmark_lines(regions, records["base"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.actguide_regions", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", required=True, help="folder with runs/base, runs/zero_rl/seedN, runs/actguide/seedN")
    parser.add_argument("--regions", required=True, help="regions.json of the base policy on the evaluation split")
    parser.add_argument("--setting", required=True, help="the training setting (JSON) the runs were trained with")
    add_protocol_arguments(parser, include=("split",), defaults={"split": "test"},
                           overrides={"split": {"choices": ("train", "dev", "test"),
                                                "help": "evaluation split (default test); train with "
                                                        "--tasks-per-benchmark 150 is the RL pool itself: did the "
                                                        "methods learn the tasks they trained on?"}})
    parser.add_argument("--tasks-per-benchmark", type=int, default=40)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--pool-runs", default=None,
                        help="a second folder with runs/zero_rl/seedN, runs/actguide/seedN trained from the same base "
                             "on a region-filtered RL pool (pool_regions); adds the 'trained where the barrier is' section")
    parser.add_argument("--pool-setting", default=None, help="with --pool-runs: the training setting of those runs")
    parser.add_argument("--doc", default=None, help="write the page here (default: print it)")
    args = parser.parse_args(argv)
    if bool(args.pool_runs) != bool(args.pool_setting):
        parser.error("--pool-runs and --pool-setting go together (the second folder's runs and their setting)")
    from agents.actguide.regions import read_regions

    start = time.perf_counter()
    runs = Path(args.runs)
    regions = read_regions(args.regions)
    setting = json.loads(Path(args.setting).read_text())
    episodes = episode_folder(args.split)
    log_dir = runs / episodes
    log_dir.mkdir(parents=True, exist_ok=True)
    from agents.actguide.config import ActGuideConfig
    from agents.actguide.tasks import make_env, sample_tasks

    env = make_env(ActGuideConfig(**setting), split=args.split)  # one env and task list for every model and seed
    task_ids = sample_tasks(env, args.tasks_per_benchmark, 0)
    records: dict[str, list[EpisodeRecord]] = {"base": [], "zero_rl": [], "actguide": []}
    for s in range(args.seeds):
        for label, folder in (("base", runs / "runs" / "base"), ("zero_rl", run_folder(runs, "zero_rl", s)),
                              ("actguide", run_folder(runs, "actguide", s))):
            records[label] += evaluate_model(folder, label, env, task_ids, args.rollouts, s, log_dir)
    pooled = None
    if args.pool_runs:
        pool_runs = Path(args.pool_runs)
        pool_setting = json.loads(Path(args.pool_setting).read_text())
        (pool_runs / episodes).mkdir(parents=True, exist_ok=True)
        pooled = {"setting": pool_setting, "zero_rl": [], "actguide": []}
        for s in range(args.seeds):
            for label in ("zero_rl", "actguide"):
                pooled[label] += evaluate_model(run_folder(pool_runs, label, s), label, env, task_ids,
                                                args.rollouts, s, pool_runs / episodes)
        from agents.actguide.tasks import training_pool

        pool_config = ActGuideConfig(**pool_setting)
        train_env = make_env(pool_config)
        kept, full = training_pool(train_env, pool_config), training_pool(train_env, ActGuideConfig(**setting))
        pooled["pool"] = f"{len(kept)} of the RL pool's {len(full)} train tasks"
        seeds = range(args.seeds)
        pooled["budget"] = [budget_row(training, label, [run_folder(root, label, s) for s in seeds])
                            for training, root in (("all tasks", runs), ("barrier + in-region", pool_runs))
                            for label in ("zero_rl", "actguide")]
    command = ("python -m benchmarks.actguide_regions " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v is not None))
    text = page(regions, records, args.seeds, args.rollouts, command, time.perf_counter() - start, args.split, setting,
                pooled)
    if args.doc:
        atomic_write_text(args.doc, text)
        print(f"written: {args.doc}")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
