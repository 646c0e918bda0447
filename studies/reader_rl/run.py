"""Run (or resume) the reader study's comparisons, then write their summaries: ``python -m studies.reader_rl.run``.

Each run is ``steer-envs compare`` at a small, equal training budget (rate-matched on dev, 3 training seeds, 3
evaluation seeds). A run that :attr:`RunSpec.shares` another links that run's ``dev/``, ``test/`` and
``checkpoints/`` folders, so its no supervision, random, best fixed rule and context rows are the same episodes as
the other's (only its RL and untrained rows are new): the page's joint tables pair every row of both on the same
test episodes. When a run finishes, its compact summary (``write_profile_summary`` of
:mod:`benchmarks.harness.results_summary`: the card, the dev choices, every test episode of every row, the wall
times) and its trainers' per-round logs are written to ``studies/reader_rl/results/<run>/``, from which :mod:`.page`
rebuilds ``docs/results_reader.md``.

``--quick`` runs every step at a toy size (two benchmarks, a few tasks, one training round), for the tests.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from baselines.registry import parse_method
from benchmarks.cli import compare_plan
from benchmarks.harness.comparison import Comparison
from benchmarks.harness.protocols import RL, UNTRAINED
from benchmarks.harness.results_summary import now, record_part, write_profile_summary
from benchmarks.harness.stats import macro_mean
from steer_envs.atomic import atomic_write_text
from steer_envs.cli.main import build_parser
from steer_envs.episodes import EpisodeLog

RESULTS = Path(__file__).resolve().parent / "results"
#: the reader's configuration: SteeringConfig's defaults plus the answerability reader's four features
READER_CONFIG = "docs/results_reader.toml"
#: the trainer's budget of every run (m rounds of k measured states, G continuations, N slow-path samples, the
#: bank of tasks states are drawn from); ``double`` is the reader row with twice the rounds and bank
BUDGETS = {"base": "m=8,k=64,G=4,N=8,bank_tasks=150", "double": "m=16,k=64,G=4,N=8,bank_tasks=300"}
#: the dev-chosen note of ``sim:loopy`` at its rate-matched decision, shown beside the rate-matched rows
LOOPY_CONTEXT = ("fixed_rule:option=refocus,at=1",)
PROTOCOL = (
    "--train-seeds 3 --split test --seeds 3 --limit 10 --dev-limit 8 --dev-seeds 1 "
    "--without filtered_bc --without sb3_ppo --no-curves "
    "--spearman-tasks 0 --workers 1 --no-progress"
)
QUICK_PROTOCOL = (
    "--train-seeds 2 --split test --seeds 1 --limit 2 --dev-limit 2 --dev-seeds 1 "
    "--without filtered_bc --without sb3_ppo --no-curves "
    "--spearman-tasks 0 --workers 1 --no-progress --benchmarks nq hotpotqa --max-probes 3"
)
QUICK_BUDGET = "m=1,k=8,G=2,N=2,bank_tasks=6"


@dataclass(frozen=True)
class RunSpec:
    """One comparison of the study."""

    name: str
    executor: str
    reader: bool
    budget: str = "base"
    #: the run whose dev/, test/ and checkpoints/ folders this one links (its shared rows are those episodes)
    shares: str | None = None
    context_rows: tuple[str, ...] = ()

    def rl(self, quick: bool) -> str:
        budget = QUICK_BUDGET if quick else BUDGETS[self.budget]
        return f"steering_rl:config={READER_CONFIG},{budget}" if self.reader else f"steering_rl:{budget}"

    def argv(self, out: Path, quick: bool) -> list[str]:
        protocol = QUICK_PROTOCOL if quick else PROTOCOL
        args = ["compare", "--out", str(out / self.name), "--executor", self.executor, "--method", self.rl(quick)]
        args += shlex.split(protocol)
        return args + (["--context-rows", *self.context_rows] if self.context_rows else [])


#: in order: a run that shares another comes after it
RUNS: tuple[RunSpec, ...] = (
    RunSpec("loopy_reader", "sim:loopy", reader=True, context_rows=LOOPY_CONTEXT),
    RunSpec("loopy_noreader", "sim:loopy", reader=False, shares="loopy_reader", context_rows=LOOPY_CONTEXT),
    RunSpec(
        "loopy_reader_2x", "sim:loopy", reader=True, budget="double", shares="loopy_reader", context_rows=LOOPY_CONTEXT
    ),
    RunSpec("weak_reader", "sim:weak", reader=True),
    RunSpec("weak_noreader", "sim:weak", reader=False, shares="weak_reader"),
)
SHARED_FOLDERS = ("dev", "test", "checkpoints")
#: beside each run's summary: its trainers' per-round logs and its steerers' dev scores
STUDY_FILE = "study.json"


def share(source: Path, dest: Path) -> None:
    """Link ``source``'s shared folders into ``dest`` (once; a rerun keeps the links)."""
    dest.mkdir(parents=True, exist_ok=True)
    (source / "checkpoints").mkdir(parents=True, exist_ok=True)
    for name in SHARED_FOLDERS:
        link = dest / name
        if not link.exists():
            link.symlink_to((source / name).resolve(), target_is_directory=True)


def trainer_logs(cmp: Comparison) -> dict[str, list[dict]]:
    """Each RL training seed's per-round log (mean measured q(s) of the states a round selected, rank pairs,
    seconds), from its checkpoint folder: what the page's training paragraph reads."""
    keep = ("round", "mean_q", "rank_pairs", "round_s", "loss_rank", "loss_grpo")
    out = {}
    for label in cmp.rows[RL].labels:
        log = cmp.dev.checkpoint_dir(parse_method(label).training_label) / "log.jsonl"
        if log.is_file():
            rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
            out[label] = [{k: r[k] for k in keep if k in r} for r in rows]
    return out


def dev_scores(cmp: Comparison) -> dict[str, list[dict]]:
    """Each trained and untrained steerer's dev F1 (macro mean over benchmarks) and rate at its chosen operating
    point, on the dev episodes the rate was matched on: the page reads them against the fixed rules' dev table."""
    out = {}
    for name in (RL, UNTRAINED):
        scores = []
        for label in cmp.rows[name].labels:
            records = EpisodeLog(cmp.dev.episodes_path(label)).records
            f1 = 100 * macro_mean(records, cmp.dev.config.benchmarks)
            rate = sum(r.interventions for r in records) / len(records)
            scores.append({"label": label, "f1": round(f1, 2), "rate": round(rate, 3)})
        out[name] = scores
    return out


def run_one(spec: RunSpec, out: Path, results: Path, quick: bool) -> Path:
    """Run (or resume) one comparison and write its summary to ``results/<run>/``."""
    if spec.shares:
        share(out / spec.shares, out / spec.name)
    argv = spec.argv(out, quick)
    args = build_parser(configure=("compare",)).parse_args(argv)
    cmp = Comparison(compare_plan(args, args.out))
    times = cmp.plan.out / "wall_times.json"
    before = json.loads(times.read_text(encoding="utf-8")) if times.is_file() else {}
    start = now()
    cmp.run()
    record_part(cmp.plan.out, start, before, json.loads(times.read_text(encoding="utf-8")))
    shown = [a if a != str(out / spec.name) else f"RUNS/{spec.name}" for a in argv]
    command = "steer-envs " + shlex.join(shown)
    options = {"run": spec.name, "reader": spec.reader, "budget": spec.budget, "shares": spec.shares}
    dest = write_profile_summary(cmp, results / spec.name, command, options)
    extra = {"training": trainer_logs(cmp), "dev": dev_scores(cmp)}
    atomic_write_text(dest / STUDY_FILE, json.dumps(extra, indent=1) + "\n")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.reader_rl.run", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the run folders (RUNS; resumable)")
    ap.add_argument("--results", type=Path, default=RESULTS, help=f"where the summaries go (default {RESULTS})")
    ap.add_argument("--runs", nargs="+", choices=[r.name for r in RUNS], help="only these runs (default all)")
    ap.add_argument("--quick", action="store_true", help="every step at a toy size (for the tests)")
    args = ap.parse_args(argv)
    wanted = set(args.runs or [r.name for r in RUNS])
    for spec in RUNS:
        if spec.name in wanted:
            print(f"=== {spec.name}", flush=True)
            print(f"wrote {run_one(spec, args.out, args.results, args.quick)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["RESULTS", "RUNS", "RunSpec", "main", "run_one"]
