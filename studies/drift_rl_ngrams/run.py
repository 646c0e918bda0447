"""The paper's steering trainer on ``sim:drift1`` with the steerer's n-gram table kept at its initialisation.

The supervised bound (``studies/drift_supervised``) fits the steerer's architecture on the ladder's fork-measured
gains twice: with every weight trained, as the paper trains θ, and with the hashed n-gram table (most of the
weights) kept at its random initialisation. The held-out loss says the trained table lets a fit memorise the train
episodes' words. This study asks whether the same holds for the paper's learning rule: the RL trainer, unchanged
(ranking loss on q(s) labels for the fast path, GRPO for the slow path, the comparison's budget
``m=30,k=96,G=4,N=8,bank_tasks=800``), with the n-gram table frozen (``steering_rl_frozen_ngrams``, registered by
this study through the public plug-in path), against the paper's setting (``steering_rl``).

* **Dev, and the choice.** Each trainer, 3 training seeds; each trained steerer's gate threshold ``tau`` is set on
  dev to one note per task (:func:`benchmarks.harness.operating.choose_rate`, the comparison's search, on its dev
  tasks: 20 per benchmark, one seed). The rule (:func:`choose`), fixed before any test run: the frozen table is
  chosen when its dev F1 over the paper's setting, paired over tasks and pooled over the training seeds, has its
  95% interval above 0; otherwise the paper's setting stays. The choice is written before the test run.
* **Test.** The ladder's test tasks and evaluation seeds (150 per benchmark, 3 seeds), beside no supervision, the
  ladder's dev-chosen fixed rule and the hand-written rung (``studies/drift_tells``); intervals are the harness's
  paired bootstrap over tasks and training seeds; each trainer's place is its gain over the fixed rule divided by
  the ladder's ceiling's (a point estimate).

Usage (from the repository root)::

    python -m studies.drift_rl_ngrams.run --out runs/drift_rl_ngrams

It resumes (training checkpoints, dev searches and test episodes are kept in ``--out``), writes
``docs/results/drift/rl_ngrams/summary.json`` and ``episodes.jsonl.gz``, and prints the table. ``--quick`` runs a
tiny version for the tests.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from agents.steering.agent import SteeringAgent
from agents.steering.backbones import build_steerer
from agents.steering.interventions import options_from_catalogue
from baselines.base import STEERING_ENV, MethodContext
from baselines.registry import METHODS, Method, register_method
from baselines.steering import ACTION_MODE, RLOptions, steering_config
from benchmarks.harness.comparison import ComparisonPlan
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.operating import choose_rate
from benchmarks.harness.provenance import code_record, portable_command
from benchmarks.harness.results_summary import machine, now
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate
from benchmarks.harness.stats import HierarchicalBootstrap, RowRuns
from benchmarks.harness.verdicts import verdict
from steer_envs.atomic import atomic_write_json
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT
from studies.drift_tells.rule import register as register_hand_written
from studies.drift_tells.run import ceiling_over_rule, ladder_of, specs_for
from studies.row_summaries import write_row_summary
from studies.rows import ladder_places, paired_rows

EXECUTOR = "sim:drift1"
#: the method this study registers: the paper's trainer with the n-gram table frozen
FROZEN = "steering_rl_frozen_ngrams"
PAPER = "steering_rl"
#: the trainers compared, by row name (the frozen one first: the paper's may reuse the comparison's checkpoints)
TRAINERS = {"rl_frozen_ngrams": FROZEN, "rl_paper": PAPER}
#: the comparison's RL budget on the drift family
BUDGET = "m=30,k=96,G=4,N=8,bank_tasks=800"
QUICK_BUDGET = "m=1,k=4,G=2,N=1,bank_tasks=8"
#: the comparison's dev search (its plan's defaults: seeds, target rate, tolerance, probes; the drift comparisons'
#: ``--dev-limit 20`` tasks per benchmark)
_PLAN = {f.name: f.default for f in fields(ComparisonPlan)}
DEV_LIMIT = 20
DEV_SEEDS, TARGET, TOLERANCE, MAX_PROBES = (_PLAN[k] for k in ("dev_seeds", "target", "tolerance", "max_probes"))
RESULTS = REPO_ROOT / "docs" / "results" / "drift" / "rl_ngrams"
CHOICE = "choice.json"
#: the rule of :func:`choose`, as the summary states it
RULE = (
    "the frozen n-gram table is chosen when its dev F1 over the paper's setting (paired over tasks, pooled over the "
    "training seeds, each at its dev-chosen rate) has its 95% interval above 0; otherwise the paper's setting stays"
)
GAINS = (
    *((row, ref) for row in TRAINERS for ref in ("none", "best_fixed_rule", "hand_written")),
    ("rl_frozen_ngrams", "rl_paper"),
)


def build_frozen(context: MethodContext) -> SteeringAgent:
    """Train (or load) the paper's RL steerer with its n-gram table at its initialisation, then deploy it as
    ``steering_rl`` is deployed (the same config, agent and gate)."""
    from agents.steering.trainer import LOG_FILE, MODEL_FILE, SteeringTrainer, load_model

    config = steering_config(context, context.options_of(RLOptions))
    run_dir = context.checkpoint_dir()
    log = run_dir / LOG_FILE
    rounds = sum(1 for line in log.read_text().splitlines() if line.strip()) if log.is_file() else 0
    if not ((run_dir / MODEL_FILE).is_file() and rounds >= config.m):
        env = context.make_env(STEERING_ENV, split="train", action_mode=ACTION_MODE)
        options = options_from_catalogue(env.unwrapped.catalogue)
        env.close()
        steerer = build_steerer(config.backbone, options, dict(config.backbone_args))
        steerer.bag.weight.requires_grad_(False)
        SteeringTrainer(
            config, run_dir, resume=True, progress=context.progress, steerer=steerer, pool=context.pool
        ).run()
    steerer, _ = load_model(run_dir / MODEL_FILE)
    chosen = context.options_of(RLOptions)
    agent = SteeringAgent(steerer, tau=chosen.tau, action_mode=ACTION_MODE, name=FROZEN, seed=chosen.seed)
    agent.run_info = {"backbone": config.backbone, "trained": True, "frozen": "n-gram table"}
    return agent


def register() -> None:
    """Register ``steering_rl_frozen_ngrams`` and the hand-written rung (once per process)."""
    register_hand_written()
    if FROZEN not in METHODS:
        register_method(
            Method(
                name=FROZEN,
                help="the paper's RL steering trainer with the steerer's n-gram table kept at its initialisation",
                env_id=STEERING_ENV,
                build=build_frozen,
                options=RLOptions,
                learns=True,
                group="steering",
                rate_knob="tau",
            )
        )


def log(line: str) -> None:
    print(line, file=sys.stderr)


def reuse(dev: RunFolder, spec: str, source: Path | None) -> bool:
    """Copy the trained steerer of ``spec`` from another run's checkpoints folder ``source`` (the drift comparison's)
    when this study has none yet and the folder of the same name there finished a training whose config has the
    fingerprint this study's would (the same executor, split, budget and seed); whether one was copied."""
    from agents.steering.trainer import LOG_FILE, MODEL_FILE
    from agents.trainer_base import CONFIG_FILE
    from baselines.registry import parse_method
    from benchmarks.harness.runner import method_context

    parsed = parse_method(spec)
    context = method_context(dev, parsed.label, False, parsed.training_label)
    mine = context.checkpoint_dir()
    theirs = None if source is None else source / mine.name
    if (mine / MODEL_FILE).is_file() or theirs is None or not (theirs / MODEL_FILE).is_file():
        return False
    config = steering_config(context, parsed.options)
    if json.loads((theirs / CONFIG_FILE).read_text())["fingerprint"] != config.fingerprint():
        return False  # another training (another executor, budget or seed)
    if len((theirs / LOG_FILE).read_text().splitlines()) < config.m:
        return False  # still training there
    shutil.copytree(theirs, mine, dirs_exist_ok=True)
    return True


def dev_choices(
    dev: RunFolder, budget: str, seeds: int, progress: bool, paper_checkpoints: Path | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each trainer's runs (training seed -> the dev-chosen label and rate), trained on first use (the paper's
    setting's steerers copied from ``paper_checkpoints`` where it holds them)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row, method in TRAINERS.items():
        out[row] = []
        for seed in range(seeds):
            spec = f"{method}:{budget},seed={seed}"
            reused = method == PAPER and reuse(dev, spec, paper_checkpoints)
            choice = choose_rate(dev, spec, TARGET, TOLERANCE, MAX_PROBES, progress, log)
            run = {"seed": seed, "label": choice.label, "rate": round(choice.dev_rate, 4), "value": choice.value}
            out[row].append({**run, **({"checkpoint": "copied from --paper-checkpoints"} if reused else {})})
    return out


def runs_of(folder: RunFolder, choices: dict[str, list[dict[str, Any]]], progress: bool) -> dict[str, RowRuns]:
    rows = {}
    for row, runs in choices.items():
        records = {}
        for run in runs:
            outcome = evaluate(folder, run["label"], progress=progress, log=log)
            records[outcome.label] = outcome.records
        rows[row] = RowRuns(row, records)
    return rows


def choose(dev: RunFolder, choices: dict[str, list[dict[str, Any]]], benchmarks: Sequence[str]) -> dict[str, Any]:
    """The pre-stated rule (:data:`RULE`) on the dev runs: the trainer the test run reports as the method's."""
    rows = runs_of(dev, choices, False)
    interval = HierarchicalBootstrap(list(rows.values()), benchmarks).gain("rl_frozen_ngrams", "rl_paper")[1]
    chosen = "rl_frozen_ngrams" if interval.low > 0 else "rl_paper"
    return {"rule": RULE, "dev_gain": {**asdict(interval), "verdict": verdict(interval)}, "chosen": chosen}


def test_rows(test: RunFolder, ladder: dict[str, Any], choices: dict[str, Any], progress: bool) -> dict[str, RowRuns]:
    specs = specs_for(ladder)
    rows = {}
    for row in ("none", "best_fixed_rule", "hand_written"):
        outcome = evaluate(test, specs[row], progress=progress, log=log)
        rows[row] = RowRuns(row, {outcome.label: outcome.records})
    rows.update(runs_of(test, choices, progress))
    return rows


def measure(rows: dict[str, RowRuns], benchmarks: Sequence[str]) -> dict[str, Any]:
    """Each row's figures and the :data:`GAINS` with their intervals and verdicts."""
    return paired_rows(rows, benchmarks, GAINS)


def table(result: dict[str, Any]) -> str:
    rows, gains = result["rows"], result["gains"]
    lines = ["| row | F1 | notes / task | runs |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r} | {v['f1']:.2f} | {v['interventions_per_task']:.2f} | {v['runs']} |" for r, v in rows.items()]
    lines += ["", "| difference | mean [95% CI] | verdict |", "| --- | --- | --- |"]
    lines += [
        f"| {k} | {g['mean']:+.2f} [{g['low']:+.2f}, {g['high']:+.2f}] | {g['verdict']} |" for k, g in gains.items()
    ]
    lines.append("")
    for row, place in result["place"].items():
        shown = "—" if place is None else f"{place:.2f}"
        lines.append(f"{row}: place between the fixed rule (0) and the ceiling (1): {shown}")
    lines.append(f"dev choice: {result['choice']['chosen']} ({result['choice']['dev_gain']['verdict']})")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The study's command line (a committed summary's recorded command must still parse with it)."""
    parser = argparse.ArgumentParser(prog="python -m studies.drift_rl_ngrams.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="checkpoints, dev searches, test episodes (resumable)")
    parser.add_argument("--train-seeds", type=int, default=3, help="training seeds per trainer")
    parser.add_argument(
        "--paper-checkpoints",
        type=Path,
        default=None,
        help="the drift comparison's checkpoints folder: the paper's setting's trained steerers are copied from it "
        "(the same training: a folder is named by the training label and the config's fingerprint)",
    )
    parser.add_argument("--summary", type=Path, default=RESULTS, help="where summary.json and the episodes go")
    parser.add_argument("--quick", action="store_true", help="a tiny run (a tiny budget, a few tasks): tests")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start = time.time()
    register()
    ladder = ladder_of(EXECUTOR)
    if ladder is None:
        raise SteerEnvsError(f"{FROZEN}: the study needs the committed ladder of {EXECUTOR}")
    budget = QUICK_BUDGET if args.quick else BUDGET
    seeds = 2 if args.quick else args.train_seeds
    cfg = ladder["config"]
    checkpoints = args.out / "checkpoints"
    dev = RunFolder(
        args.out / "dev",
        EvalConfig(executor=EXECUTOR, split="dev", seeds=DEV_SEEDS, limit=1 if args.quick else DEV_LIMIT),
        checkpoints,
    )
    test = RunFolder(
        args.out / "test",
        EvalConfig(
            executor=EXECUTOR,
            split="test",
            seeds=1 if args.quick else cfg["seeds"],
            limit=1 if args.quick else cfg["limit"],
        ),
        checkpoints,
    )
    choices = dev_choices(dev, budget, seeds, not args.no_progress, args.paper_checkpoints)
    choice_path = args.out / CHOICE
    if not choice_path.is_file():  # written once, before any test episode
        atomic_write_json(choice_path, choose(dev, choices, dev.config.benchmarks))
    choice = json.loads(choice_path.read_text(encoding="utf-8"))
    rows = test_rows(test, ladder, choices, not args.no_progress)
    result = measure(rows, test.config.benchmarks)
    ceiling = ceiling_over_rule(ladder)
    result["place"] = ladder_places(result["gains"], list(TRAINERS), ceiling)
    result["ceiling_over_rule"] = ceiling
    result["choice"] = choice
    summary = {
        "command": portable_command(
            "python -m studies.drift_rl_ngrams.run", list(argv if argv is not None else sys.argv[1:])
        ),
        "written": now(),
        "machine": machine(),
        "seconds": round(time.time() - start, 1),
        "executor": EXECUTOR,
        "budget": budget,
        "dev": {"config": dev.config.to_json(), "target": TARGET, "tolerance": TOLERANCE, "runs": choices},
        **result,
        "config": test.config.to_json(),
        "code": code_record([dev.root, test.root]),
    }
    written = write_row_summary(args.summary, summary, rows)
    print(table(result))
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
