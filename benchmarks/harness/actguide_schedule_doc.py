"""Regenerate ``docs/results_actguide_schedule.md`` from one resumable command (issue 22: where guidance is spent, at
equal budgets: a share of the budget with guidance, rescued tasks revisited)::

    python -m benchmarks.harness.actguide_schedule_doc --out runs/actguide_regions --jobs 2
    python -m benchmarks.harness.actguide_schedule_doc --quick --out /tmp/s --doc /tmp/s.md

Why: on the regions page's test table, ACTGUIDE-RL trained throughout with guidance reaches more barrier tasks than
zero RL (a higher unguided Pass@8) but solves each less reliably (a lower mean success), and spends about half its
rollouts on probes and guided groups. Two switches of ``ActGuideConfig`` act on that:
``guidance_until`` guides hard groups only in the first share of the budget (the rest sharpens, on π_u's own
rollouts, what guidance opened) and ``revisit_rescued`` draws a rescued task again in the next iteration, unguided
unless it is still hard. :data:`~benchmarks.pages.actguide_schedule.CANDIDATES` lists the settings tried.

It shares the regions pipeline's run folder (``actguide_regions_doc``: the same base, regions and step 2 cells; a
finished run there is read back, not retrained) and runs, each step resumable:

1. the base and its regions (test, dev, train), as the regions pipeline does;
2. both methods at their step 2 cells (``RUNS/step2/choices.json`` when the regions pipeline wrote one, else
   ``STEP2_CHOICE``, the choice its dev grid made on the landed page), every training seed;
3. the candidates on dev, each ACTGUIDE-RL's cell with its switches ("always": the cell itself); the choice by the
   regions pipeline's rule, fixed before test: the highest barrier + in-region unguided dev success, mean over the
   training seeds (a tie goes to the candidate listed first: the less changed method);
4. the chosen candidate, zero RL's cell and "always" on test and on the RL pool's own train tasks, every training
   seed; the barrier diagnostics of the base, zero RL, "always" and the chosen one on the test barrier group;
5. the ablations and noise levels of ``VARIANTS`` on top of the chosen candidate (``sft_rl`` on zero RL's cell),
   ``--ablation-seeds`` seeds each, on test (when "always" is chosen, the regions pipeline's step 2 ablations are
   those runs: they are read from its folder, not trained twice).

Trainings run ``--jobs`` at a time (one core each). Nothing is chosen on test. The page is built from the run
folders only (``steer-envs report results_actguide_schedule --out RUNS`` rebuilds it without running anything).
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from steer_envs.atomic import atomic_write_json
from steer_envs.paths import REPO_ROOT

from benchmarks.actguide_regions import run_folder
from benchmarks.pages.actguide_regions import STEP2_METHODS
from benchmarks.pages.actguide_schedule import (
    CANDIDATE, CANDIDATES, PAGE, PAGE_FILE, STEP2_CHOICE, ablation_root, candidate_folder,
)
from benchmarks.pages.timing import add_time

from .actguide_doc import invocation
from .actguide_regions_doc import ABLATION_VARIANTS, Pipeline, RegionsPlan, TrainSpec, dev_score

ZERO, ACT = STEP2_METHODS[0], STEP2_METHODS[1]  # zero RL and ACTGUIDE-RL with the unguided baseline


@dataclass
class SchedulePlan:
    """The regions plan it shares folders with, the candidates tried on dev and the ablations of the chosen one."""

    regions: RegionsPlan
    candidates: tuple[str, ...] = tuple(c.name for c in CANDIDATES)
    ablations: tuple[str, ...] = ABLATION_VARIANTS
    ablation_seeds: int = 3
    step2_choice: dict = field(default_factory=lambda: {k: list(v) for k, v in STEP2_CHOICE.items()})

    def make_quick(self) -> SchedulePlan:
        """The regions plan's quick size, three candidates, one ablation, one seed."""
        self.regions.make_quick()
        self.candidates = ("always", "until0.5", "until0.5_revisit")
        self.ablations, self.ablation_seeds = ("no_mixed",), 1
        self.step2_choice = {"zero_rl": list(self.regions.grid[0]), "actguide": list(self.regions.grid[-1])}
        return self

    def to_json(self) -> dict:
        return {"regions": self.regions.to_json(), "candidates": list(self.candidates), "ablations": list(self.ablations),
                "ablation_seeds": self.ablation_seeds, "jobs": self.regions.jobs, "step2_choice": self.step2_choice}


class SchedulePipeline(Pipeline):
    """The steps of the module docstring, on the regions pipeline's folders and helpers."""

    def __init__(self, plan: SchedulePlan) -> None:
        super().__init__(plan.regions)
        self.schedule = plan

    @property
    def step3(self) -> Path:
        return self.plan.out / "step3"

    def step2_choices(self) -> tuple[dict[str, list], str]:
        """Both methods' step 2 cells and where they come from."""
        recorded = self.plan.step2 / "choices.json"
        if recorded.is_file():
            choices = json.loads(recorded.read_text())["choices"]
            if {ZERO.name, ACT.name} <= set(choices):
                return choices, "the regions pipeline's dev grid (`RUNS/step2/choices.json`)"
        return self.schedule.step2_choice, "the regions page's dev grid as landed (`STEP2_CHOICE`)"

    def folder(self, choices: dict, name: str) -> Path:
        return candidate_folder(self.plan.out, name, self.plan.cell(ACT, *choices[ACT.name]))

    def candidate_setting(self, choices: dict, name: str) -> dict:
        return {**self.plan.cell_setting(ACT, *choices[ACT.name]), **dict(CANDIDATE[name].overrides)}

    def trainings(self, choices: dict) -> list[TrainSpec]:
        """Steps 2 and 3's trainings: both step 2 cells and every candidate, each with every training seed."""
        p, n = self.plan, max(self.plan.seeds, self.plan.grid_seeds)
        specs: list[TrainSpec] = []
        cell = p.cell(ZERO, *choices[ZERO.name])
        setting = self.setting_file(cell, p.cell_setting(ZERO, *choices[ZERO.name]))
        specs += [(f"chosen/{ZERO.name}/{s}", setting, ZERO.variant, s, run_folder(cell, ZERO.variant, s)) for s in range(n)]
        for name in self.schedule.candidates:
            folder = self.folder(choices, name)
            setting = self.setting_file(folder, self.candidate_setting(choices, name))
            key = f"chosen/{ACT.name}" if name == "always" else f"schedule/{name}"
            specs += [(f"{key}/{s}", setting, ACT.variant, s, run_folder(folder, ACT.variant, s)) for s in range(n)]
        return specs

    def choose(self, choices: dict) -> str:
        """Step 3's choice on dev (the rule of the module docstring); writes ``step3/choice.json``."""
        p = self.plan
        self.evaluate(p.step2 / "grid", "base", [0], "dev")
        groups = self.region_groups("dev")
        seeds = range(p.grid_seeds)
        self.evaluate(p.cell(ZERO, *choices[ZERO.name]), ZERO.variant, seeds, "dev")
        scores = {}
        for name in self.schedule.candidates:
            scores[name] = dev_score(self.evaluate(self.folder(choices, name), ACT.variant, seeds, "dev"), groups)
        best = max(scores, key=lambda name: scores[name])  # a tie: the earlier candidate (the less changed method)
        rule = (f"highest barrier + in-region unguided success on dev, mean over training seeds 0..{p.grid_seeds - 1}; "
                "a tie goes to the candidate listed first")
        atomic_write_json(self.step3 / "choice.json", {"rule": rule, "chosen": best, "scores": scores}, sort_keys=False)
        return best

    def test(self, choices: dict, name: str) -> None:
        """Step 4: zero RL, guidance throughout and the chosen candidate on test and on the pool's train tasks; the
        diagnostics before and after."""
        p = self.plan
        seeds = range(p.seeds)
        zero, always, chosen = p.cell(ZERO, *choices[ZERO.name]), self.folder(choices, "always"), self.folder(choices, name)
        for split in ("test", "train"):  # train: the RL pool's own tasks (did guidance teach what it guided?)
            self.evaluate(p.out, "base", seeds, split)
            for folder, variant in dict.fromkeys(((zero, ZERO.variant), (always, ACT.variant), (chosen, ACT.variant))):
                self.evaluate(folder, variant, seeds, split)
        models = {"zero_rl": run_folder(zero, ZERO.variant, 0), "actguide": run_folder(always, ACT.variant, 0)}
        if name != "always":
            models[f"actguide_{name}"] = run_folder(chosen, ACT.variant, 0)
        self.barrier_diagnostics(models, root=self.step3, key="step3/barrier_test")

    def ablations(self, choices: dict, name: str) -> None:
        """Step 5: every variant on top of the chosen candidate (``sft_rl``: zero RL's cell), on test."""
        p, s = self.plan, self.schedule
        root = ablation_root(p.out, name, s.ablation_seeds == p.ablation_seeds)
        chosen = self.folder(choices, name) / "setting.json"
        zero = p.cell(ZERO, *choices[ZERO.name]) / "setting.json"
        specs = [(f"step3/ablation/{v}/{seed}", zero if v == "sft_rl" else chosen, v, seed, run_folder(root, v, seed))
                 for v in s.ablations for seed in range(s.ablation_seeds)]
        self.train_many(specs, p.jobs)
        for v in s.ablations:
            self.evaluate(root, v, range(s.ablation_seeds), "test")

    def run_all(self, argv_text: str, doc: Path) -> Path:
        start = time.perf_counter()
        self.base_and_regions()
        choices, source = self.step2_choices()
        self.train_many(self.trainings(choices), self.plan.jobs)
        chosen = self.choose(choices)
        self.test(choices, chosen)
        self.ablations(choices, chosen)
        seconds = add_time(self.plan.out / "times.json", "schedule pipeline", time.perf_counter() - start)
        atomic_write_json(self.plan.out / PAGE_FILE, {"command": argv_text, "plan": self.schedule.to_json(),
                                                      "step2_choices": choices, "step2_source": source, "chosen": chosen,
                                                      "commands": self.commands, "seconds": seconds}, sort_keys=False)
        return PAGE.build(self.plan.out, doc, PAGE.load(self.plan.out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/actguide_regions",
                        help="run folders, shared with actguide_regions_doc (default runs/actguide_regions)")
    parser.add_argument("--doc", default=str(REPO_ROOT / PAGE.doc))
    parser.add_argument("--seeds", type=int, default=3, help="training seeds of every comparison and dev cell (default 3)")
    parser.add_argument("--ablation-seeds", type=int, default=3, help="training seeds of each ablation (default 3)")
    parser.add_argument("--jobs", type=int, default=1, help="trainings at a time, one core each (default 1)")
    parser.add_argument("--quick", action="store_true", help="a small dry run: tiny budgets, few tasks, 1 seed")
    args = parser.parse_args(argv)
    plan = SchedulePlan(RegionsPlan(Path(args.out), seeds=args.seeds, grid_seeds=args.seeds, jobs=args.jobs),
                        ablation_seeds=args.ablation_seeds)
    if args.quick:
        plan.make_quick()
    doc = SchedulePipeline(plan).run_all(invocation("benchmarks.harness.actguide_schedule_doc", argv), Path(args.doc))
    print(f"wrote {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
