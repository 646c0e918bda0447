"""Regenerate ``docs/results_actguide.md``: ACTGUIDE-RL against zero RL, its ablations, noisy guidance, the budget
curve, the barrier diagnostics and the cost of probes, from one resumable command::

    python -m benchmarks.harness.actguide_doc                 # the documented setting (see --help)
    python -m benchmarks.harness.actguide_doc --quick          # a small dry run of the same pipeline

Every training run is a ``steer-envs train actguide`` command (printed, resumable: a finished run is skipped, an
interrupted one resumes from its checkpoint); every evaluation appends episodes to a JSONL log that a rerun reads
back instead of playing again. The page is written from those files only, by the page builder
(:mod:`benchmarks.pages.actguide`; ``steer-envs report results_actguide --out OUT`` rebuilds it without running).

Protocol: a *base* policy (zero RL on train tasks outside the RL pool) is the initial policy of every method, so
"out-region" has one meaning: the test tasks on which the base's unguided Pass@8 is 0. Each method then trains
from the base with the same rollout budget (probes included) on the same RL pool, for each training seed, and is
evaluated **without any hint** on the same test tasks and rollout seeds; intervals are the harness's paired
stratified bootstrap (``benchmarks.harness.stats``: tasks resampled within benchmarks, seeds averaged per task).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.pages.actguide import (
    MAIN,
    PAGE,
    PAGE_FILE,
    TURN_BUDGETS,
    Plan,
    default_base,
    default_setting,
    episode_file,
    read_barrier,
)
from benchmarks.pages.actguide import eval_env as _eval_env
from benchmarks.pages.timing import add_time
from steer_envs.atomic import atomic_write_json
from steer_envs.cli.common import add_protocol_arguments
from steer_envs.cli.main import main as cli_main
from steer_envs.episodes import EpisodeLog, EpisodeRecord
from steer_envs.paths import REPO_ROOT

from .budget import build_lock

#: the documented training setting: ActGuideConfig's defaults of these fields (read from the dataclass)
SETTING: dict = default_setting()
#: the base policy: zero RL on train tasks outside the RL pool (the stand-in for a pretrained base model)
BASE: dict = default_base()


def cli_command(argv: Sequence[str]) -> str:
    return "steer-envs " + " ".join(shlex.quote(str(a)) for a in argv)


def invocation(module: str, argv: Sequence[str] | None) -> str:
    """How a generator was called (``python -m MODULE ARGS``), for its page: ``argv`` as given, or the process's."""
    shown = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m " + module, *map(shlex.quote, shown)])


def run_finished(run: Path) -> bool:
    progress = run / "checkpoint.json"
    config = run / "config.json"
    if not progress.is_file() or not config.is_file():
        return False
    return json.loads(progress.read_text())["budget_used"] >= json.loads(config.read_text())["config"]["budget"]


def train_once(argv: list[str], run: Path, timings: dict) -> str:
    """Run one training command unless its run is finished; resume an interrupted one. The run folder is locked
    while it trains (:func:`~benchmarks.harness.budget.build_lock`): a second process on the same folder (the worker
    of a pipeline that was killed, beside its rerun) waits, then finds the run finished instead of training it too."""
    command = cli_command(argv)
    with build_lock(run):
        if not run_finished(run):
            full = argv + (["--resume"] if (run / "checkpoint.json").is_file() else [])
            print(f"$ {cli_command(full)}", flush=True)
            start = time.perf_counter()
            if cli_main(full) != 0:
                raise SystemExit(f"training failed: {cli_command(full)}")
            timings[command] = timings.get(command, 0.0) + time.perf_counter() - start
    return command


def train_all(plan: Plan) -> dict[str, str]:
    plan.out.mkdir(parents=True, exist_ok=True)
    setting_file, base_file = plan.out / "setting.json", plan.out / "base.json"
    atomic_write_json(setting_file, plan.setting, sort_keys=False)
    atomic_write_json(base_file, plan.base, sort_keys=False)
    timings_path = plan.out / "train_times.json"
    timings = json.loads(timings_path.read_text()) if timings_path.is_file() else {}
    commands = {
        "base": train_once(
            [
                "train",
                "actguide",
                "--config",
                str(base_file),
                "--variant",
                "zero_rl",
                "--seed",
                "0",
                "--out",
                str(plan.base_dir),
                "--no-progress",
            ],
            plan.base_dir,
            timings,
        )
    }
    atomic_write_json(timings_path, timings, sort_keys=False)
    for variant in plan.variants:
        for seed in plan.seeds_of(variant):
            run = plan.run_dir(variant, seed)
            commands[f"{variant}/{seed}"] = train_once(
                [
                    "train",
                    "actguide",
                    "--config",
                    str(setting_file),
                    "--variant",
                    variant,
                    "--seed",
                    str(seed),
                    "--init-from",
                    str(plan.base_dir),
                    "--out",
                    str(run),
                    "--no-progress",
                ],
                run,
                timings,
            )
            atomic_write_json(timings_path, timings, sort_keys=False)
    plan.seconds["train"] = sum(timings.values())
    return commands


# -- evaluation (episodes appended to JSONL logs; a rerun reads them back) --------------------------------------
def evaluate_run(
    plan: Plan, label: str, model_dir: Path, seed: int, max_turns: int | None = None
) -> list[EpisodeRecord]:
    """Unguided episodes of one trained learner (seed labels ``seed * 100 + rollout``), cached in a JSONL log."""
    from agents.actguide.evaluate import evaluate
    from agents.actguide.trainer import load_learner

    log = EpisodeLog(_episode_file(plan, label, max_turns))
    env, ids = _eval_env(plan, max_turns)
    expected = {(t, seed * 100 + r) for t in ids for r in range(plan.eval_rollouts)}
    have = {(r.task_id, r.seed) for r in log.records if r.seed // 100 == seed}
    if not expected <= have:
        learner, _ = load_learner(model_dir)
        todo = [t for t in ids if any((t, seed * 100 + r) not in have for r in range(plan.eval_rollouts))]
        with log:
            for episode in evaluate(learner, env, todo, plan.eval_rollouts, label, seed=seed, seed_offset=seed * 100):
                log.append(episode)
    return [r for r in log.records if (r.task_id, r.seed) in expected]


def _episode_file(plan: Plan, label: str, max_turns: int | None) -> Path:
    path = episode_file(plan, label, max_turns)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def evaluate_all(plan: Plan) -> dict[str, list[EpisodeRecord]]:
    start = time.perf_counter()
    records: dict[str, list[EpisodeRecord]] = {}
    records["base"] = [r for s in range(plan.seeds) for r in evaluate_run(plan, "base", plan.base_dir, s)]
    for variant in plan.variants:
        records[variant] = [
            r for s in plan.seeds_of(variant) for r in evaluate_run(plan, variant, plan.run_dir(variant, s), s)
        ]
    for turns in TURN_BUDGETS:  # the budget curve: training seed 0 of each policy
        for label, model in (("base", None), *((v, v) for v in MAIN)):
            records[f"{label}@{turns}"] = evaluate_run(
                plan, label, plan.base_dir if model is None else plan.run_dir(model, 0), 0, turns
            )
    plan.seconds["eval"] = _add_time(plan, "eval", time.perf_counter() - start)
    return records


def _add_time(plan: Plan, key: str, seconds: float) -> float:
    """Accumulate a step's wall time over resumed regenerations (``times.json``); return the total."""
    return add_time(plan.out / "times.json", key, seconds)


def _barrier(plan: Plan):
    """The barrier diagnostics of the base and the trained policy (cached in ``barrier.json``)."""
    from agents.actguide.barrier import diagnose
    from agents.actguide.tasks import sample_tasks
    from agents.actguide.trainer import load_learner

    times = plan.out / "times.json"
    plan.seconds["barrier"] = json.loads(times.read_text()).get("barrier", 0.0) if times.is_file() else 0.0
    cached = read_barrier(plan)
    if cached is not None:
        return cached
    start = time.perf_counter()
    env, _ = _eval_env(plan)
    ids = sample_tasks(env, plan.barrier_tasks_per_benchmark, 0)
    reports = []
    for label, folder in (("initial (base)", plan.base_dir), ("ACTGUIDE-RL (seed 0)", plan.run_dir("actguide", 0))):
        learner, _ = load_learner(folder)
        reports.append(diagnose(learner, env, ids, label, K=8, max_k=4, horizon=4, seed=0))
    atomic_write_json(plan.out / "barrier.json", [r.to_dict() for r in reports], sort_keys=False)
    plan.seconds["barrier"] = _add_time(plan, "barrier", time.perf_counter() - start)
    return reports


def write_page(
    plan: Plan, commands: dict[str, str], records: dict[str, list[EpisodeRecord]] | None, doc: Path, argv_text: str
) -> Path:
    """Record the plan and commands in ``OUT/page.json`` and build the page from the run folder (``records`` is
    not needed: the page reads the episode logs back)."""
    _barrier(plan)  # the page reads barrier.json: make sure it is there
    atomic_write_json(
        plan.out / PAGE_FILE, {"command": argv_text, "plan": plan.to_json(), "commands": commands}, sort_keys=False
    )
    return PAGE.build(plan.out, doc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/actguide", help="run folders (default runs/actguide)")
    parser.add_argument("--doc", default=str(REPO_ROOT / "docs" / "results_actguide.md"))
    parser.add_argument("--seeds", type=int, default=3, help="training seeds of the main comparison (default 3)")
    parser.add_argument("--ablation-seeds", type=int, default=1, help="training seeds per ablation (default 1)")
    add_protocol_arguments(
        parser,
        include=("split",),
        defaults={"split": "test"},
        overrides={"split": {"choices": ("dev", "test"), "help": "evaluation split (dev: for choosing)"}},
    )
    parser.add_argument("--quick", action="store_true", help="a small dry run: tiny budgets, few tasks, 1 seed")
    args = parser.parse_args(argv)
    plan = Plan(Path(args.out), seeds=args.seeds, ablation_seeds=args.ablation_seeds, eval_split=args.split)
    if args.quick:
        plan.make_quick()
    argv_text = invocation("benchmarks.harness.actguide_doc", argv)
    commands = train_all(plan)
    records = evaluate_all(plan)
    doc = write_page(plan, commands, records, Path(args.doc), argv_text)
    print(f"wrote {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
