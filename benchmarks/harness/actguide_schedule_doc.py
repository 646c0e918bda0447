"""Regenerate ``docs/results_actguide_schedule.md`` from one resumable command (issue 22: guidance for a share of the
budget, then zero RL's iterations)::

    python -m benchmarks.harness.actguide_schedule_doc --out runs/actguide_regions --jobs 2
    python -m benchmarks.harness.actguide_schedule_doc --quick --out /tmp/s --doc /tmp/s.md

Why a schedule: on the regions page's test table, ACTGUIDE-RL trained throughout with guidance reaches more barrier
tasks than zero RL (unguided Pass@8 48.4 against 30.0) but solves each less reliably (mean success 16.4 against
17.5), and spends half its rollouts on probes and guided groups. ``guidance_until`` (``ActGuideConfig``) guides hard
groups only in the first share of the budget; the rest sharpens, on π_u's own rollouts, what guidance opened.

It shares the regions pipeline's run folder (``actguide_regions_doc``: the same base, regions and step 2 cells; a
finished run there is read back, not retrained) and runs, each step resumable:

1. the base and its regions (test, dev, train), as the regions pipeline does;
2. both methods at their step 2 cells (``RUNS/step2/choices.json`` when the regions pipeline wrote one, else
   :data:`STEP2_CHOICE`, the choice its dev grid made on the landed page), every training seed;
3. the schedule on dev: ACTGUIDE-RL's cell with ``guidance_until`` in :data:`SHARES`; the choice among those and
   share 1 (the cell itself) by the regions pipeline's rule, fixed before test: the highest barrier + in-region
   unguided dev success, mean over the training seeds (a tie goes to the larger share: the less changed method);
4. the chosen share, zero RL's cell and share 1 on test and on the RL pool's own train tasks, every training seed;
   the barrier diagnostics of the base, zero RL, share 1 and the chosen share on the test barrier group;
5. the ablations and noise levels of ``VARIANTS`` on top of the chosen share (``sft_rl`` on zero RL's cell),
   ``--ablation-seeds`` seeds each, on test.

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

from benchmarks.actguide_regions import success
from benchmarks.pages.actguide_regions import STEP2_METHODS
from benchmarks.pages.actguide_schedule import PAGE, PAGE_FILE, SHARES, STEP2_CHOICE, share_folder
from benchmarks.pages.timing import add_time

from .actguide_doc import invocation
from .actguide_regions_doc import ABLATION_VARIANTS, Pipeline, RegionsPlan, TrainSpec

ZERO, ACT = STEP2_METHODS[0], STEP2_METHODS[1]  # zero RL and ACTGUIDE-RL with the unguided baseline


@dataclass
class SchedulePlan:
    """The regions plan it shares folders with, the shares tried on dev and the ablations of the chosen share."""

    regions: RegionsPlan
    shares: tuple[float, ...] = SHARES
    ablations: tuple[str, ...] = ABLATION_VARIANTS
    ablation_seeds: int = 3
    jobs: int = 1
    step2_choice: dict = field(default_factory=lambda: {k: list(v) for k, v in STEP2_CHOICE.items()})

    def make_quick(self) -> SchedulePlan:
        """The regions plan's quick size, two shares, one ablation, one seed."""
        self.regions.make_quick()
        self.shares, self.ablations, self.ablation_seeds = (0.5,), ("no_mixed",), 1
        self.step2_choice = {"zero_rl": list(self.regions.grid[0]), "actguide": list(self.regions.grid[-1])}
        return self

    def to_json(self) -> dict:
        return {"regions": self.regions.to_json(), "shares": list(self.shares), "ablations": list(self.ablations),
                "ablation_seeds": self.ablation_seeds, "jobs": self.jobs, "step2_choice": self.step2_choice}


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

    def share_setting(self, choices: dict, share: float) -> dict:
        return {**self.plan.cell_setting(ACT, *choices[ACT.name]), "guidance_until": share}

    def runs(self, root: Path, variant: str, seed: int) -> Path:
        return root / "runs" / variant / f"seed{seed}"

    def trainings(self, choices: dict) -> list[TrainSpec]:
        """Steps 2 and 3's trainings: both step 2 cells and every share, each with every training seed."""
        p, n = self.plan, max(self.plan.seeds, self.plan.grid_seeds)
        specs: list[TrainSpec] = []
        for method in (ZERO, ACT):
            cell = p.cell(method, *choices[method.name])
            setting = self.setting_file(cell, p.cell_setting(method, *choices[method.name]))
            specs += [(f"chosen/{method.name}/{s}", setting, method.variant, s, self.runs(cell, method.variant, s))
                      for s in range(n)]
        for share in self.schedule.shares:
            folder = share_folder(self.plan.out, share)
            setting = self.setting_file(folder, self.share_setting(choices, share))
            specs += [(f"schedule/{share:g}/{s}", setting, ACT.variant, s, self.runs(folder, ACT.variant, s))
                      for s in range(n)]
        return specs

    def choose(self, choices: dict) -> float:
        """Step 3's choice on dev (the rule of the module docstring); writes ``step3/choice.json``."""
        p = self.plan
        self.evaluate(p.step2 / "grid", "base", [0], "dev")
        groups = self.region_groups("dev")
        seeds = range(p.grid_seeds)
        self.evaluate(p.cell(ZERO, *choices[ZERO.name]), ZERO.variant, seeds, "dev")
        candidates = {1.0: p.cell(ACT, *choices[ACT.name]),
                      **{share: share_folder(p.out, share) for share in self.schedule.shares}}
        scores = {}
        for share, folder in candidates.items():
            records = self.evaluate(folder, ACT.variant, seeds, "dev")
            scores[share] = sum(success(records, groups[g]) for g in ("barrier", "in_region") if groups[g])
        best = max(sorted(scores, reverse=True), key=lambda share: scores[share])  # a tie: the larger share
        rule = (f"highest barrier + in-region unguided success on dev, mean over training seeds 0..{p.grid_seeds - 1}; "
                "a tie goes to the larger share")
        atomic_write_json(self.step3 / "choice.json", {"rule": rule, "share": best,
                                                       "scores": {f"{k:g}": v for k, v in scores.items()}}, sort_keys=False)
        return best

    def test(self, choices: dict, share: float) -> None:
        """Step 4: the three on test, and the diagnostics before and after."""
        p = self.plan
        seeds = range(p.seeds)
        zero, act = p.cell(ZERO, *choices[ZERO.name]), p.cell(ACT, *choices[ACT.name])
        chosen = act if share == 1.0 else share_folder(p.out, share)
        for split in ("test", "train"):  # train: the RL pool's own tasks (did guidance teach what it guided?)
            self.evaluate(p.out, "base", seeds, split)
            for folder, variant in ((zero, ZERO.variant), (act, ACT.variant), (chosen, ACT.variant)):
                self.evaluate(folder, variant, seeds, split)
        models = {"zero_rl": self.runs(zero, ZERO.variant, 0), "actguide": self.runs(act, ACT.variant, 0)}
        if share != 1.0:
            models[f"actguide_until{share:g}"] = self.runs(chosen, ACT.variant, 0)
        self.barrier_diagnostics(models, root=self.step3, key="step3/barrier_test")

    def ablations(self, choices: dict, share: float) -> None:
        """Step 5: every variant on top of the chosen share (``sft_rl``: zero RL's cell), on test."""
        p, s = self.plan, self.schedule
        root = self.step3 / "ablations"
        chosen = self.setting_file(self.step3 / "chosen", self.share_setting(choices, share))
        zero = p.cell(ZERO, *choices[ZERO.name]) / "setting.json"
        specs = [(f"step3/ablation/{v}/{seed}", zero if v == "sft_rl" else chosen, v, seed, self.runs(root, v, seed))
                 for v in s.ablations for seed in range(s.ablation_seeds)]
        self.train_many(specs, s.jobs)
        for v in s.ablations:
            self.evaluate(root, v, range(s.ablation_seeds), "test")

    def run_all(self, argv_text: str, doc: Path) -> Path:
        start = time.perf_counter()
        self.base_and_regions()
        choices, source = self.step2_choices()
        self.train_many(self.trainings(choices), self.schedule.jobs)
        share = self.choose(choices)
        self.test(choices, share)
        self.ablations(choices, share)
        seconds = add_time(self.plan.out / "times.json", "schedule pipeline", time.perf_counter() - start)
        atomic_write_json(self.plan.out / PAGE_FILE, {"command": argv_text, "plan": self.schedule.to_json(),
                                                      "step2_choices": choices, "step2_source": source, "share": share,
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
    plan = SchedulePlan(RegionsPlan(Path(args.out), seeds=args.seeds, grid_seeds=args.seeds),
                        ablation_seeds=args.ablation_seeds, jobs=args.jobs)
    if args.quick:
        plan.make_quick()
    doc = SchedulePipeline(plan).run_all(invocation("benchmarks.harness.actguide_schedule_doc", argv), Path(args.doc))
    print(f"wrote {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
