"""What ACTGUIDE-RL's update does with its guided groups on the skill barrier, iteration by iteration.

The barrier study (``studies/actguide_barrier``) finds that ACTGUIDE-RL as specified gains almost nothing over zero
RL on the ``skill_chain`` family, although a hint of the plan rescues many hard groups, and that baselining a guided
group by the unguided group it replaced gains far more. This study measures why, inside the update, on the same
runs: it retrains the barrier study's arms (the same settings, base policy and seeds, so the same training) with a
trainer that records, at every iteration, before the update:

* **the guided groups' reward patterns**: how many of the guided groups (on the family's tasks) have every reward 0,
  every reward 1, or a mix. Under GRPO's group normalisation a group whose rewards are all equal has advantage 0 on
  every rollout: it teaches nothing, however the guided rollouts went;
* **the advantage on the skill's actions**: on guided family rollouts that succeeded in four steps (the person, the
  first link, the second link, the answer: the only way to succeed in four), the advantage of the two link steps,
  and the mixed-policy weight on them: ``r = π_θ(a | unguided prompt) / π_old(a | guided prompt)`` and LUFFY's
  ``r / (r + γ)``; their product is how hard the update pushes the unguided policy toward the skill;
* **what carries**: the unguided policy's probability of those link actions (``π_θ(a | unguided)``) as training goes.

The runs are the barrier study's: the trainer's own log is checked against that study's committed training figures
(guided groups, rescued groups and rollouts, mean over seeds), so the figures here describe the page's runs.

Usage (from the repository root)::

    python -m studies.actguide_mechanism.run --out runs/actguide_mechanism

It resumes (each run folder, with its per-iteration records), writes
``studies/actguide_mechanism/results/summary.json`` and prints the table. ``--quick`` runs a toy size for the tests.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.actguide.config import ActGuideConfig
from agents.actguide.rollout import Trajectory
from agents.actguide.trainer import ActGuideTrainer, UpdateBatch
from agents.grpo import shaped_weight
from benchmarks.harness.provenance import code_record, code_version, portable_command
from benchmarks.harness.results_summary import machine, now
from steer_envs.atomic import atomic_write_text
from studies.actguide_barrier.run import FAMILY, Plan

#: the arms retrained: ACTGUIDE-RL as specified and the dev-chosen variant (guided groups baselined by the unguided
#: group they replaced)
ARMS = ("actguide", "unguided_baseline")
#: the plan steps of a four-step family success that carry the skill (0: the person, 3: the answer)
LINK_STEPS = (1, 2)
SUCCESS_STEPS = 4
RECORDS = "mechanism.jsonl"
#: written into a run folder when its training ended, holding the commit that trained it
FINISHED = "finished"
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
BARRIER_SUMMARY = HERE.parent / "actguide_barrier" / "results" / "summary.json"
#: the trainer-log figures compared with the barrier study's committed ones (mean over seeds)
CHECKED = ("guided_groups", "rescued_groups", "rollouts")


def pattern(group: Sequence[Trajectory]) -> str:
    """``all_fail``, ``all_success`` or ``mixed``: whether the group's rewards are all 0, all positive, or neither."""
    wins = [t.success for t in group]
    return "all_success" if all(wins) else "all_fail" if not any(wins) else "mixed"


class MechanismTrainer(ActGuideTrainer):
    """The ACTGUIDE-RL trainer, unchanged, that records each iteration's guided groups before its update (in
    ``RECORDS`` of the run folder, one row per iteration). Recording reads the learner without gradient and draws
    no random number, so the training is the one the plain trainer runs."""

    def __init__(self, config: ActGuideConfig, run_dir: Path) -> None:
        super().__init__(config, run_dir, resume=(run_dir / "checkpoint.json").is_file(), on_iteration_end=self._write)
        self._row: dict[str, Any] = {}

    def _write(self, iteration: int, record: dict[str, Any]) -> None:
        with open(self.run_dir / RECORDS, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"iteration": iteration, **self._row}) + "\n")
        self._row = {}

    def _update_batch(self, learner, reference, groups: list[list[Trajectory]]) -> UpdateBatch | None:
        self._row = self.guided_record(learner, groups)
        return super()._update_batch(learner, reference, groups)

    def guided_record(self, learner, groups: list[list[Trajectory]]) -> dict[str, Any]:
        c = self.config
        family = [g for g in groups if g and g[0].guided and g[0].benchmark == FAMILY]
        patterns = [pattern(g) for g in family]
        adv, r, weight, p_unguided = [], [], [], []
        for group in family:
            for trajectory, a in zip(group, self._advantages(group)):
                if not trajectory.success or len(trajectory.steps) != SUCCESS_STEPS:
                    continue
                steps = [trajectory.steps[i] for i in LINK_STEPS]
                with torch.no_grad():
                    new = torch.cat(
                        [
                            x.reshape(-1)
                            for x in learner.token_logprobs([s.unguided_view for s in steps], [s.action for s in steps])
                        ]
                    )
                old = torch.cat([s.old_logp.reshape(-1) for s in steps]).to(new.device)
                adv += [float(a)] * len(steps)
                r += torch.exp(new - old).tolist()
                weight += shaped_weight(new, old, c.luffy_gamma).tolist()
                p_unguided += torch.exp(new).tolist()
        return {
            "guided_family_groups": len(family),
            **{name: patterns.count(name) for name in ("all_fail", "all_success", "mixed")},
            "link_steps": len(adv),
            "link_adv": adv,
            "link_r": [round(x, 5) for x in r],
            "link_weight": [round(x, 5) for x in weight],
            "link_p_unguided": [round(x, 5) for x in p_unguided],
        }


def train(plan: Plan, out: Path, variant: str, seed: int, base: Path | None) -> Path:
    """One run (resumed when its folder holds a checkpoint), as ``steer-envs train actguide`` runs it for the
    barrier study; the base (``base is None``) is trained with the plain trainer."""
    run_dir = out / "runs" / ("base" if base is None else f"{variant}/seed{seed}")
    if (run_dir / FINISHED).is_file():
        return run_dir
    config = ActGuideConfig.from_dict(plan.base if base is None else plan.setting).variant(variant)
    config.seed = seed
    if base is not None:
        config.init_from = str(base)
    if base is None:
        ActGuideTrainer(config, run_dir, resume=(run_dir / "checkpoint.json").is_file()).run()
    else:
        MechanismTrainer(config, run_dir).run()
    (run_dir / FINISHED).write_text(code_version())  # the commit that trained it (the summary's code record)
    return run_dir


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def mean(values: Sequence[float]) -> float | None:
    return round(float(np.mean(values)), 4) if len(values) else None


def summarise_run(run_dir: Path) -> dict[str, Any]:
    """One run's guided groups and link steps over its iterations (only the iterations that guided any)."""
    rows = read_jsonl(run_dir / RECORDS)
    log = [r for r in read_jsonl(run_dir / "log.jsonl") if "iteration" in r]
    groups = sum(r["guided_family_groups"] for r in rows)
    link = {key: [x for r in rows for x in r[f"link_{key}"]] for key in ("adv", "r", "weight", "p_unguided")}
    push = [a * w for a, w in zip(link["adv"], link["weight"], strict=True)]
    halves = np.array_split(np.arange(len(rows)), 2)
    return {
        "iterations": len(rows),
        "guided_family_groups": groups,
        "share": {
            name: round(sum(r[name] for r in rows) / groups, 4) if groups else None
            for name in ("all_fail", "all_success", "mixed")
        },
        "zero_advantage_share": round(sum(r["all_fail"] + r["all_success"] for r in rows) / groups, 4)
        if groups
        else None,
        "link_steps": len(link["adv"]),
        "link_adv": mean(link["adv"]),
        "link_adv_zero_share": mean([float(a == 0.0) for a in link["adv"]]),
        "link_r": mean(link["r"]),
        "link_weight": mean(link["weight"]),
        "link_push": mean(push),
        "link_p_unguided_first_half": mean([x for i in halves[0] for x in rows[i]["link_p_unguided"]]),
        "link_p_unguided_second_half": mean([x for i in halves[1] for x in rows[i]["link_p_unguided"]]),
        "iterations_logged": len(log),
        "training_seconds": log[-1]["wall_s"] if log else 0.0,
        "trainer_log": {key: sum(r[key] for r in log) for key in CHECKED},
    }


def summarise(out: Path, seeds: int) -> dict[str, Any]:
    arms: dict[str, Any] = {}
    for arm in ARMS:
        runs = {f"seed{s}": summarise_run(out / "runs" / arm / f"seed{s}") for s in range(seeds)}
        pooled = {
            key: mean([r[key] for r in runs.values() if r[key] is not None])
            for key in ("zero_advantage_share", "link_adv", "link_adv_zero_share", "link_r", "link_weight", "link_push")
        }
        pooled["share"] = {
            name: mean([r["share"][name] for r in runs.values() if r["share"][name] is not None])
            for name in ("all_fail", "all_success", "mixed")
        }
        arms[arm] = {"runs": runs, "mean_over_seeds": pooled}
    return arms


def checked_against_barrier(arms: dict[str, Any]) -> dict[str, Any]:
    """The trainer logs' guided groups, rescued groups and rollouts (mean over seeds) beside the barrier study's."""
    if not BARRIER_SUMMARY.is_file():
        return {}
    committed = json.loads(BARRIER_SUMMARY.read_text(encoding="utf-8"))["training"]
    out = {}
    for arm, data in arms.items():
        mine = {key: float(np.mean([r["trainer_log"][key] for r in data["runs"].values()])) for key in CHECKED}
        theirs = {key: committed.get(arm, {}).get(key) for key in CHECKED}
        out[arm] = {
            "here": mine,
            "barrier_study": theirs,
            "same": all(theirs[k] is not None and abs(mine[k] - theirs[k]) < 1e-6 for k in CHECKED),
        }
    return out


def table(arms: dict[str, Any]) -> str:
    def cell(v: float | None, fmt: str = ".2f") -> str:
        return "—" if v is None else format(v, fmt)

    lines = [
        "| arm | run | guided family groups | all 0 | all 1 | mixed | link steps | advantage | r | weight | push | "
        "π_u(link) first half → second |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for arm, data in arms.items():
        for run, r in data["runs"].items():
            s = r["share"]
            lines.append(
                f"| {arm} | {run} | {r['guided_family_groups']} | {cell(s['all_fail'])} | {cell(s['all_success'])} | "
                f"{cell(s['mixed'])} | {r['link_steps']} | {cell(r['link_adv'])} | {cell(r['link_r'], '.3f')} | "
                f"{cell(r['link_weight'])} | {cell(r['link_push'])} | {cell(r['link_p_unguided_first_half'], '.3f')} → "
                f"{cell(r['link_p_unguided_second_half'], '.3f')} |"
            )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The study's command line (a committed summary's recorded command must still parse with it)."""
    parser = argparse.ArgumentParser(
        prog="python -m studies.actguide_mechanism.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="the run folders (resumable)")
    parser.add_argument("--seeds", type=int, default=3, help="training seeds per arm (the barrier study's: 3)")
    parser.add_argument("--summary", type=Path, default=RESULTS, help="where summary.json goes")
    parser.add_argument("--quick", action="store_true", help="the barrier study's toy size: tests")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start = time.time()
    plan = Plan(out=args.out)
    if args.quick:
        plan.make_quick()
    seeds = 1 if args.quick else args.seeds
    base = train(plan, args.out, "zero_rl", 0, None)
    for arm in ARMS:
        for seed in range(seeds):
            train(plan, args.out, arm, seed, base)
    arms = summarise(args.out, seeds)
    summary = {
        "command": portable_command(
            "python -m studies.actguide_mechanism.run", list(argv if argv is not None else sys.argv[1:])
        ),
        "written": now(),
        "machine": machine(),
        "seconds": round(time.time() - start, 1),
        "training_seconds": round(
            sum(r["training_seconds"] for arm in arms.values() for r in arm["runs"].values())
            + (read_jsonl(base / "log.jsonl")[-1]["wall_s"] if (base / "log.jsonl").is_file() else 0.0),
            1,
        ),
        "setting": plan.setting,
        "seeds": seeds,
        "arms": arms,
        "checked": {} if args.quick else checked_against_barrier(arms),
        "code": code_record(extra_commits=[p.read_text() for p in sorted((args.out / "runs").rglob(FINISHED))]),
    }
    args.summary.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.summary / "summary.json", json.dumps(summary, indent=1) + "\n")
    print(table(arms))
    print(f"wrote {args.summary / 'summary.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
