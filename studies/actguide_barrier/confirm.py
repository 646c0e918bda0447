"""The method's arm on training seeds no earlier run used: ``python -m studies.actguide_barrier.confirm --out RUNS``.

The variant among the candidates (guided groups baselined by the unguided group they replace) was proposed after
reading test results of the pipeline's training seeds (0–2); choosing it on dev afterwards does not make its test
result on those seeds a confirmation. This stage trains zero RL and every candidate again on fresh seeds
(:data:`CONFIRM_SEEDS`), from the same base, settings and budget as the pipeline in ``RUNS`` (which must have run its
``select`` stage), evaluates them on the same test tasks, and reads the criterion below, fixed in this module before
the run. The result is reported whatever it is, beside the same gains over all the seeds.

Written under ``RUNS/confirm`` (resumable like the pipeline); the compact result goes to
``studies/actguide_barrier/results/confirmation.json`` with every test episode it reads
(``confirmation_episodes.jsonl.gz``), so a test recomputes it from the committed files.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness.stats import Interval
from benchmarks.harness.verdicts import verdict
from steer_envs.atomic import atomic_write_json
from steer_envs.episodes import EpisodeRecord
from steer_envs.errors import SteerEnvsError

from .run import GROUPS, Pipeline, Plan
from .selection import CANDIDATES
from .summarize import RESULTS, code_files, compare, read_records, write_episodes

#: the training seeds of the confirmation (the pipeline's runs use 0, 1, 2)
CONFIRM_SEEDS = (3, 4, 5)
ARMS = ("zero_rl", *CANDIDATES)
#: zero RL is the bar of every candidate
PAIRS = tuple((c, "zero_rl") for c in CANDIDATES)
CRITERION = (
    "the arm chosen on dev (RUNS/choice.json) is confirmed when its paired gain in family success over zero RL, "
    f"on the training seeds {', '.join(map(str, CONFIRM_SEEDS))} alone (test tasks, the harness's bootstrap with "
    "training seeds resampled), has a 95% interval above 0 (the verdict rule's 'reproduces'); otherwise it is not"
)
RESULT_FILE = "confirmation.json"
EPISODES_FILE = "confirmation_episodes.jsonl.gz"


class ConfirmPipeline(Pipeline):
    """The study's pipeline writing under ``RUNS/confirm`` and training from ``RUNS``'s base."""

    def __init__(self, plan: Plan, root: Path, progress: bool = True) -> None:
        super().__init__(plan, progress, stages=("confirm",))
        self.root = root

    @property
    def base_dir(self) -> Path:
        return self.root / "runs" / "base"


def pipeline(out: Path, progress: bool = True) -> ConfirmPipeline:
    """The confirmation's pipeline over the study's folder ``out``, with the sizes its plan recorded."""
    if not (out / "choice.json").is_file() or not (out / "runs" / "base" / "model.pt").is_file():
        raise SteerEnvsError(
            f"{out} has no base model or dev choice yet: run `python -m studies.actguide_barrier.run --out {out}` "
            "(its barrier, compare and select stages) first"
        )
    recorded = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    return ConfirmPipeline(Plan(out / "confirm", **{k: v for k, v in recorded.items() if k != "out"}), out, progress)


def run(out: Path, progress: bool = True) -> ConfirmPipeline:
    """Train and evaluate every arm on the confirmation seeds (each step skipped when done)."""
    pipe = pipeline(out, progress)
    pipe._write_settings()
    p = pipe.plan
    for arm in ARMS:
        for seed in CONFIRM_SEEDS:
            pipe.train("setting.json", arm, seed, pipe.run_dir(arm, seed), pipe.base_dir)
            for group in GROUPS:
                pipe.evaluate(pipe.run_dir(arm, seed), f"{arm}.seed{seed}", group, p.eval_split, p.eval_rollouts)
    return pipe


def rows(out: Path, seeds: Sequence[int]) -> dict[str, dict[str, dict[str, list[EpisodeRecord]]]]:
    """Every arm's test records per training seed and group: seeds of the confirmation from ``RUNS/confirm``, the
    earlier ones from the pipeline's own evaluations."""
    p = pipeline(out, progress=False).plan
    found: dict[str, dict[str, dict[str, list[EpisodeRecord]]]] = {}
    for group in GROUPS:
        for arm in ARMS:
            for seed in seeds:
                folder = out / "confirm" if seed in CONFIRM_SEEDS else out
                path = folder / "eval" / f"{arm}.seed{seed}.{group}.{p.eval_split}.n{p.eval_rollouts}.jsonl"
                if not path.is_file():
                    raise SteerEnvsError(f"{path} is missing: run python -m studies.actguide_barrier.confirm first")
                found.setdefault(group, {}).setdefault(arm, {})[f"{arm}.seed{seed}"] = read_records(path)
    return found


def of_seeds(arm_rows: dict[str, dict[str, list[EpisodeRecord]]], seeds: Sequence[int]) -> dict:
    """The runs (``<arm>.seed<k>``) of the training seeds ``seeds``."""
    return {
        arm: {k: v for k, v in runs.items() if int(k.rsplit("seed", 1)[1]) in seeds} for arm, runs in arm_rows.items()
    }


def result(groups: dict[str, dict[str, dict[str, list[EpisodeRecord]]]], chosen: str, earlier: Sequence[int]) -> dict:
    """The gains on the confirmation seeds alone and on all seeds (``earlier``: the pipeline's), and the criterion's
    verdict."""

    def only(seeds: Sequence[int]) -> dict:
        return {group: compare(of_seeds(arm_rows, seeds), group, PAIRS) for group, arm_rows in groups.items()}

    fresh = only(CONFIRM_SEEDS)
    gain = Interval(*fresh["family"]["gains"][f"{chosen} - zero_rl"]["success"])
    return {
        "criterion": CRITERION,
        "chosen": chosen,
        "verdict": verdict(gain),
        "confirmation_seeds": list(CONFIRM_SEEDS),
        "confirmation": fresh,
        "earlier_seeds": list(earlier),
        "all_seeds": only((*earlier, *CONFIRM_SEEDS)),
    }


def summarize(out: Path, results: Path = RESULTS) -> dict:
    """Write :data:`RESULT_FILE` and :data:`EPISODES_FILE` into ``results`` from the study's folder ``out``."""
    chosen = json.loads((out / "choice.json").read_text(encoding="utf-8"))["chosen"]
    earlier = tuple(range(pipeline(out, progress=False).plan.seeds))
    groups = rows(out, (*earlier, *CONFIRM_SEEDS))
    times = out / "confirm" / "times.confirm.json"
    summary = {
        **result(groups, chosen, earlier),
        "code": code_files(),
        "command": "python -m studies.actguide_barrier.confirm --out RUNS",
        "times_s": json.loads(times.read_text(encoding="utf-8")) if times.is_file() else {},
        "episodes": {"file": EPISODES_FILE},
    }
    write_episodes(groups, results / EPISODES_FILE)
    atomic_write_json(results / RESULT_FILE, summary)
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the study's folder (after its select stage)")
    parser.add_argument("--results", default=str(RESULTS), help="where confirmation.json goes")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    run(Path(args.out), progress=not args.quiet)
    summary = summarize(Path(args.out), Path(args.results))
    gain = summary["confirmation"]["family"]["gains"][f"{summary['chosen']} - zero_rl"]["success"]
    print(f"{summary['chosen']} − zero RL on seeds {CONFIRM_SEEDS}: {gain} → {summary['verdict']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
