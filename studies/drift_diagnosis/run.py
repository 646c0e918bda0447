"""Where RL steering loses its margin on ``sim:drift2``: ablations of the paper's trainer chosen on dev, the chosen
one measured once on test.

On ``sim:drift2`` the learnable ceiling beats the best fixed rule by ~8 F1 and SB3 PPO (a feature MLP trained on the
same budget) by ~10, while the paper's trainer ties the rule. Each variant changes one thing the margin could be
lost to, everything else being the main comparison's RL row (its spec, training seeds, dev split and rate):

* ``paper``: the main comparison's RL steerer as it is;
* ``rank_any``: the fast path's ranking loss on pairs of states of *any* task (``rank_pairs = "any"``), where the
  paper ranks states of the same task only: across-task differences in q(s) are then trained, which a single τ
  needs;
* ``twice_rounds``: twice the training rounds (``m``), the budget.

Every variant's training seeds are rate-matched on dev (τ to ~1 intervention per task, as in the comparison) and
scored there (gain over no supervision, paired; the fast path's Spearman with q(s) within and across tasks). The
dev rule, fixed here before any test run: the variant with the highest dev gain is chosen; only if it is not
``paper`` is it evaluated on test, once, on the comparison's test tasks and seeds, paired with its stored episodes.

Usage (from the repository root; the comparison's summary must be in ``--summaries``)::

    python -m studies.drift_diagnosis.run --variants paper rank_any twice_rounds --out runs/drift_diagnosis
    python -m studies.drift_diagnosis.run --test --out runs/drift_diagnosis   # the dev rule, then test

``--checkpoints DIR`` reuses trained models (e.g. the comparison's ``checkpoints``); ``--variants`` of one
invocation run in turn, so two invocations with different variants use two cores.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from baselines.registry import parse_method
from benchmarks.harness.comparison import Comparison, Row, _summary_dict, row_runs, spearman_per_label
from benchmarks.harness.protocols import RL, RULE
from benchmarks.harness.provenance import code_version, portable_command
from benchmarks.harness.results_summary import machine, now
from benchmarks.harness.runner import REFERENCE, evaluate
from benchmarks.harness.stats import HierarchicalBootstrap, summarize_rows
from benchmarks.harness.summary_rows import StoredProfile, check_same_setting, stored_plan
from benchmarks.harness.sweeps import with_option
from steer_envs.atomic import atomic_write_text

HERE = Path(__file__).resolve().parent
EXECUTOR = "sim:drift2"


def _twice_rounds(rl: str) -> dict[str, str]:
    from agents.steering.config import SteeringConfig

    return {"m": str(2 * int(parse_method(rl).given.get("m", SteeringConfig.m)))}


#: variant -> the options it sets on the comparison's RL spec (a path is relative to the repository root)
VARIANTS: dict[str, Callable[[str], dict[str, str]]] = {
    "paper": lambda rl: {},
    "rank_any": lambda rl: {"config": "studies/drift_diagnosis/rank_any.toml"},
    "twice_rounds": _twice_rounds,
}
#: the rows of the comparison each tested variant is paired with
PAIRED_WITH = (REFERENCE, RULE, RL, "sb3_ppo")
SUMMARY = "diagnosis.json"


def rl_spec(plan: dict[str, Any]) -> str:
    """The RL steerer's spec among a stored comparison plan's contenders."""
    return next(spec for spec in plan["contenders"] if parse_method(spec).name == RL)


def variant_spec(rl: str, variant: str) -> str:
    spec = rl
    for key, value in VARIANTS[variant](rl).items():
        spec = with_option(spec, key, value)
    return spec


def comparison(stored: StoredProfile, out: Path, checkpoints: str | None) -> Comparison:
    plan = stored_plan(stored.summary, out, progress=False)
    plan = replace(plan, own_rate_rows=(), checkpoints=Path(checkpoints) if checkpoints else None)
    cmp = Comparison(plan)
    check_same_setting(cmp.report, stored)
    return cmp


def spearman_on_dev(cmp: Comparison, labels: list[str], tasks_per_benchmark: int) -> dict[str, float]:
    """The fast path's Spearman with measured q(s), within and across tasks, on the first dev tasks (mean over
    ``labels``)."""
    result = spearman_per_label(cmp.dev, cmp.dev, labels, tasks_per_benchmark, log=lambda _: None)
    return {key: result[key] for key in ("within", "across", "tasks")}


def run_variant(stored: StoredProfile, variant: str, out: Path, checkpoints: str | None) -> dict[str, Any]:
    """Train the variant's seeds, rate-match each on dev, and score it there against no supervision."""
    t0 = time.perf_counter()
    spec = variant_spec(rl_spec(stored.summary["plan"]), variant)
    cmp = comparison(stored, out, checkpoints)
    labels = []
    for seed in range(cmp.plan.train_seeds):
        label = with_option(spec, "seed", str(seed))
        cmp.train(label)
        labels.append(cmp._choose(label).label)
    evaluate(cmp.dev, REFERENCE, progress=False)
    rows = {REFERENCE: Row(REFERENCE, [REFERENCE]), variant: Row(variant, labels)}
    runs = row_runs(cmp.dev, rows)
    boot = HierarchicalBootstrap(runs, stored.summary["benchmarks"])
    summaries = summarize_rows(runs, stored.summary["benchmarks"], reference=REFERENCE, boot=boot)
    dev = next(s for s in summaries if s.method == variant)
    record = {
        "variant": variant,
        "spec": spec,
        "labels": labels,
        "dev": _summary_dict(dev),
        "spearman_dev": spearman_on_dev(cmp, labels, 5),
        "seconds": round(time.perf_counter() - t0, 1),
        "commit": code_version(),
    }
    atomic_write_text(out / f"{variant}.json", json.dumps(record, indent=1) + "\n")
    return record


def choose(records: dict[str, dict[str, Any]]) -> str:
    """The dev rule: the variant with the highest dev gain over no supervision (``paper`` on a tie)."""
    return max(records, key=lambda v: (records[v]["dev"]["avg_gain"]["mean"], v == "paper"))


def run_test(stored: StoredProfile, out: Path, checkpoints: str | None, summaries: Path, command: str) -> Path:
    records = {v: json.loads((out / f"{v}.json").read_text(encoding="utf-8")) for v in VARIANTS}
    chosen = choose(records)
    data: dict[str, Any] = {
        "executor": EXECUTOR,
        "variants": records,
        "rule": "the variant with the highest dev gain over no supervision; tested only if it is not paper",
        "chosen": chosen,
        "command": command,
        "written": now(),
        "machine": machine(),
    }
    if chosen != "paper":
        t0 = time.perf_counter()
        cmp = comparison(stored, out, checkpoints)
        for label in records[chosen]["labels"]:
            evaluate(cmp.report, label, progress=False)
        tested = row_runs(cmp.report, {chosen: Row(chosen, records[chosen]["labels"])})
        stored_runs = stored.runs()
        runs = [stored_runs[name] for name in PAIRED_WITH] + tested
        boot = HierarchicalBootstrap(runs, stored.summary["benchmarks"])
        data["test"] = {
            "summaries": [_summary_dict(s) for s in summarize_rows(runs, stored.summary["benchmarks"], boot=boot)],
            "pairwise": [{"a": chosen, "b": b, **asdict(boot.gain(chosen, b)[1])} for b in PAIRED_WITH],
            "seconds": round(time.perf_counter() - t0, 1),
            "commit": code_version(),
        }
    dest = Path(summaries) / "diagnosis"
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write_text(dest / SUMMARY, json.dumps(data, indent=1) + "\n")
    return dest / SUMMARY


def main(argv: list[str] | None = None) -> int:
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m studies.drift_diagnosis.run", description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=[])
    ap.add_argument("--test", action="store_true", help="apply the dev rule to the variants' records, then test")
    ap.add_argument("--out", default="runs/drift_diagnosis")
    ap.add_argument("--summaries", default="docs/results/drift", help="where the comparison's summary is")
    ap.add_argument("--checkpoints", help="a folder of trained models to reuse (default OUT/checkpoints)")
    args = ap.parse_args(argv)
    stored = StoredProfile.read(Path(args.summaries), EXECUTOR)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for variant in args.variants:
        record = run_variant(stored, variant, out, args.checkpoints)
        gain = record["dev"]["avg_gain"]
        print(f"{variant}: dev gain {gain['mean']:+.2f} [{gain['low']:+.2f}, {gain['high']:+.2f}]", flush=True)
    if args.test:
        command = portable_command("python -m studies.drift_diagnosis.run", argv)
        print(f"wrote {run_test(stored, out, args.checkpoints, Path(args.summaries), command)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
