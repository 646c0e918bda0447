"""Regenerate ``docs/results_actguide_regions.md`` (and its train-split page) from one resumable command (issue 22)::

    python -m benchmarks.harness.actguide_regions_doc --out runs/actguide_regions --jobs 2   # the documented pipeline
    python -m benchmarks.harness.actguide_regions_doc --quick --out /tmp/r --doc /tmp/r.md --train-doc /tmp/rt.md

What it runs, in order (every step resumes: a finished training is skipped and an interrupted one continues from its
checkpoint, a regions file or diagnostic already written is read back, every evaluation appends to a JSONL log that
a rerun reads instead of playing again):

1. the base policy (``actguide_doc``'s ``BASE``) and its regions (``steer-envs barrier --regions``) on the test,
   dev and train splits (train: the RL pool's own tasks);
2. zero RL and ACTGUIDE-RL at the documented setting on the whole RL pool and on the pool kept to the base's
   barrier and in-region tasks (``pool_regions``), with the ablations of the documented setting;
3. step 2: the dev grid (:data:`GRID_CELLS`, the same for both methods, ``--grid-seeds`` training seeds per cell),
   the choice per method by the rule fixed before test (highest barrier + in-region success on dev, mean over the
   cell's seeds), the chosen pair with every training seed on test, the barrier diagnostics of the base and the chosen pair, the reference-action alignment, and the
   ablations at the chosen setting with ``--ablation-seeds`` seeds.

The pages are then built from the run folders only (:mod:`benchmarks.pages.actguide_regions`;
``steer-envs report results_actguide_regions --out OUT`` rebuilds one without running anything). Nothing is chosen
on test. Intervals are the harness's paired stratified bootstrap (:mod:`benchmarks.harness.stats`).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from steer_envs.cli.main import main as cli_main
from steer_envs.atomic import atomic_write_json
from steer_envs.episodes import EpisodeRecord
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT

from benchmarks.actguide_regions import REGION_ORDER, episode_folder, evaluate_model, run_folder, success
from benchmarks.pages.actguide import ABLATIONS, NOISE, default_base, default_setting
from benchmarks.pages.actguide_regions import (
    GRID_CELLS, PAGE, PAGE_FILE, STEP2_METHODS, TRAIN_PAGE, Step2Method, cell_name, grid_cells,
)
from benchmarks.pages.timing import add_time

from .actguide_doc import cli_command, invocation, train_once

#: every variant the ablation tables train (sft_rl at zero RL's chosen cell: it is SFT, then zero RL)
ABLATION_VARIANTS = ABLATIONS + NOISE


@dataclass
class RegionsPlan:
    """What the pipeline trains and evaluates; ``make_quick`` shrinks it to a dry run of the same steps."""

    out: Path
    seeds: int = 3  # training seeds of every comparison
    grid_seeds: int = 3  # training seeds of each dev grid cell (the choice is by their mean)
    ablation_seeds: int = 3  # training seeds of each ablation at the step 2 setting
    pool_ablation_seeds: int = 1  # training seeds of each ablation at the documented setting (steps 1 and 3)
    jobs: int = 1  # trainings at a time, each in its own process (one core each)
    eval_tasks: int = 40  # test and dev tasks per benchmark
    rollouts: int = 8  # unguided rollouts per task and training seed
    setting: dict = field(default_factory=default_setting)
    base: dict = field(default_factory=default_base)
    grid: tuple[tuple[int, float], ...] = GRID_CELLS
    ablations: tuple[str, ...] = ABLATION_VARIANTS
    #: extra flags of the ``barrier --regions`` commands and of the diagnostics (the quick run's small K)
    region_args: tuple[str, ...] = ()
    diag_args: tuple[str, ...] = ()

    def make_quick(self) -> RegionsPlan:
        """Tiny budgets, two benchmarks, a two-cell grid, one ablation, one seed: every step in a few minutes."""
        small = {"benchmarks": ["nq", "triviaqa"], "tasks_per_benchmark": 3, "budget": 24, "batch_tasks": 2,
                 "group_size": 3, "max_turns": 3}
        self.setting.update(small)
        self.base.update(small, pretrain_tasks_per_benchmark=3)
        self.seeds = self.ablation_seeds = self.pool_ablation_seeds = self.grid_seeds = 1
        self.eval_tasks, self.rollouts = 2, 2
        self.grid = ((2, 0.003), (4, 0.01))
        self.ablations = ("no_mixed",)
        self.region_args = ("--K-unguided", "4", "--K-guided", "2", "--max-k", "2")
        self.diag_args = ("--K", "2", "--max-k", "2", "--horizon", "2")
        return self

    def to_json(self) -> dict:
        data = asdict(self)
        data["out"] = str(self.out)
        return data

    # -- where things live --------------------------------------------------------------------------------------
    @property
    def base_dir(self) -> Path:
        return self.out / "runs" / "base"

    def regions_file(self, split: str) -> Path:
        return self.out / f"regions_{split}" / "regions.json"

    @property
    def pool(self) -> Path:
        return self.out / "pool"

    @property
    def step2(self) -> Path:
        return self.out / "step2"

    def cell(self, method: Step2Method, epochs: int, lr: float) -> Path:
        return self.step2 / "grid" / cell_name(method.name, epochs, lr)

    @property
    def pool_setting(self) -> dict:
        """The documented setting with the RL pool kept to the base's barrier and in-region train tasks."""
        return {**self.setting, "pool_regions": str(self.regions_file("train").resolve()), "pool_keep": "barrier,in_region"}

    def cell_setting(self, method: Step2Method, epochs: int, lr: float) -> dict:
        return {**self.pool_setting, "update_epochs": epochs, "lr": lr, **dict(method.overrides)}


def check_trained_as(run: Path, setting_file: Path, variant: str, seed: int) -> None:
    """Refuse a run folder trained with another setting: a finished run is skipped, not retrained, so a folder left
    from a different setting would otherwise enter the page under this one's name. ``init_from`` is not compared
    (a path, written relative or absolute by whoever ran the command)."""
    from agents.actguide.config import ActGuideConfig
    from agents.actguide.trainer import CONFIG_FILE

    recorded = run / CONFIG_FILE
    if not recorded.is_file():
        return
    expected = json.loads(json.dumps(asdict(ActGuideConfig.load(setting_file).variant(variant))))
    expected["seed"] = seed
    have = json.loads(json.dumps(asdict(ActGuideConfig.from_dict(json.loads(recorded.read_text())["config"],
                                                                  where=str(recorded)))))  # older runs: defaults
    differ = sorted(k for k in expected.keys() | have.keys() if k != "init_from" and expected.get(k) != have.get(k))
    if differ:
        raise SteerEnvsError(f"{run} was trained with another setting than {setting_file} (variant {variant}, seed "
                             f"{seed}): {', '.join(f'{k} {have.get(k)!r} != {expected.get(k)!r}' for k in differ)}; "
                             f"move the folder away or choose another --out")


def cached(result: Path, inputs: dict) -> bool:
    """Whether ``result`` was computed from exactly ``inputs`` (the model folders a diagnostic read): a dev choice
    that changes makes the diagnostics of the old pair stale, so they are recomputed instead of read back."""
    record = result.with_name(result.name + ".inputs.json")
    return result.is_file() and record.is_file() and json.loads(record.read_text()) == inputs


def remember(result: Path, inputs: dict) -> None:
    atomic_write_json(result.with_name(result.name + ".inputs.json"), inputs, sort_keys=False)


def dev_score(records: Sequence[EpisodeRecord], groups: dict[str, set[str]]) -> float:
    """The dev rule's score: barrier + in-region unguided success (an empty region adds nothing: its success is NaN,
    which would make every comparison false)."""
    return sum(success(records, groups[g]) for g in ("barrier", "in_region") if groups[g])


#: one training of :meth:`Pipeline.train_many`: (command key, setting file, variant, seed, run folder)
TrainSpec = tuple[str, Path, str, int, Path]


def _train_in_process(argv: list[str], run: Path) -> tuple[str, float]:
    """:func:`train_once` in a worker process; returns the command and the seconds it trained (0 when finished)."""
    timings: dict[str, float] = {}
    command = train_once(argv, run, timings)
    return command, timings.get(command, 0.0)


class Pipeline:
    """The steps of the module docstring over one :class:`RegionsPlan`; ``commands`` keeps every command it stands
    on (the page prints them), ``timings`` the wall time of each training it ran."""

    def __init__(self, plan: RegionsPlan) -> None:
        self.plan = plan
        self.commands: dict[str, str] = {}
        self.timings_path = plan.out / "train_times.json"
        self.timings = json.loads(self.timings_path.read_text()) if self.timings_path.is_file() else {}
        self.envs: dict[str, tuple] = {}

    # -- training -------------------------------------------------------------------------------------------------
    def train_argv(self, setting_file: Path, variant: str, seed: int, run: Path, init: bool = True) -> list[str]:
        return ["train", "actguide", "--config", str(setting_file), "--variant", variant, "--seed", str(seed),
                *(["--init-from", str(self.plan.base_dir)] if init else []), "--out", str(run), "--no-progress"]

    def train(self, key: str, setting_file: Path, variant: str, seed: int, run: Path, init: bool = True) -> Path:
        argv = self.train_argv(setting_file, variant, seed, run, init)
        check_trained_as(run, setting_file, variant, seed)
        self.commands[key] = train_once(argv, run, self.timings)
        atomic_write_json(self.timings_path, self.timings, sort_keys=False)
        return run

    def train_many(self, specs: Sequence[TrainSpec], jobs: int = 1) -> None:
        """Several trainings (each starting from the base), ``jobs`` at a time, each in its own process (a training
        uses one core: two of them finish in the time of one on a 2-core machine). The same commands, folders and
        results as :meth:`train` one by one (a training's result depends only on its config and seed)."""
        if jobs <= 1:
            for spec in specs:
                self.train(*spec)
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        for key, setting_file, variant, seed, run in specs:  # refuse a stale folder before anything runs
            check_trained_as(run, setting_file, variant, seed)
            self.commands[key] = cli_command(self.train_argv(setting_file, variant, seed, run))  # in the specs' order
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_train_in_process, self.train_argv(f, v, s, run), run) for _k, f, v, s, run in specs]
            for future in as_completed(futures):
                try:
                    command, seconds = future.result()
                except BaseException:  # a failed training: stop the queue now, not after every other one
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
                if seconds:
                    self.timings[command] = self.timings.get(command, 0.0) + seconds
                    atomic_write_json(self.timings_path, self.timings, sort_keys=False)

    def setting_file(self, folder: Path, setting: dict) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / "setting.json", setting, sort_keys=False)
        return folder / "setting.json"

    def regions(self, split: str, tasks_per_benchmark: int) -> Path:
        path = self.plan.regions_file(split)
        argv = ["barrier", "--regions", "--model", str(self.plan.base_dir), "--split", split, "--tasks-per-benchmark",
                str(tasks_per_benchmark), "--seed", "0", "--out", str(path.parent), *self.plan.region_args]
        self.commands[f"regions/{split}"] = cli_command(argv)
        if not path.is_file():
            print(f"$ {cli_command(argv)}", flush=True)
            if cli_main(argv) != 0:
                raise SystemExit(f"failed: {cli_command(argv)}")
        return path

    # -- evaluation -----------------------------------------------------------------------------------------------
    def env(self, split: str):
        """One env and task list per split, shared by every model and seed (so every method sees the same episodes)."""
        if split not in self.envs:
            from agents.actguide.config import ActGuideConfig
            from agents.actguide.tasks import make_env, sample_tasks

            env = make_env(ActGuideConfig(**self.plan.setting), split=split)
            per_benchmark = self.plan.setting["tasks_per_benchmark"] if split == "train" else self.plan.eval_tasks
            self.envs[split] = (env, sample_tasks(env, per_benchmark, 0))
        return self.envs[split]

    def evaluate(self, runs: Path, variant: str, seeds: Sequence[int], split: str, log_dir: Path | None = None,
                 label: str | None = None) -> list[EpisodeRecord]:
        env, ids = self.env(split)
        folder = log_dir if log_dir is not None else runs / episode_folder(split)
        folder.mkdir(parents=True, exist_ok=True)
        records = []
        for s in seeds:
            model = self.plan.base_dir if variant == "base" else run_folder(runs, variant, s)
            records += evaluate_model(model, label or variant, env, ids, self.plan.rollouts, s, folder)
        return records

    # -- the steps ------------------------------------------------------------------------------------------------
    def base_and_regions(self) -> None:
        p = self.plan
        base_file = p.out / "base.json"
        self.setting_file(p.out, p.setting)
        atomic_write_json(base_file, p.base, sort_keys=False)
        self.train("base", base_file, "zero_rl", 0, p.base_dir, init=False)
        for split in ("test", "dev"):
            self.regions(split, p.eval_tasks)
        self.regions("train", p.setting["tasks_per_benchmark"])

    def documented_setting(self) -> None:
        """Steps 1 and 3: both methods on the whole pool and on the barrier pool, and the pool's ablations."""
        p = self.plan
        setting_file = p.out / "setting.json"
        pool_file = p.out / "pool_setting.json"
        atomic_write_json(pool_file, p.pool_setting, sort_keys=False)
        seeds = range(p.seeds)
        specs: list[TrainSpec] = []
        for variant in ("zero_rl", "actguide"):
            for s in seeds:
                specs += [(f"all/{variant}/{s}", setting_file, variant, s, run_folder(p.out, variant, s)),
                          (f"pool/{variant}/{s}", pool_file, variant, s, run_folder(p.pool, variant, s))]
        specs += [(f"pool/{variant}/{s}", pool_file, variant, s, run_folder(p.pool, variant, s))
                  for variant in p.ablations for s in range(p.pool_ablation_seeds)]
        self.train_many(specs, p.jobs)
        for split in ("test", "train"):
            self.evaluate(p.out, "base", seeds, split)
            for variant in ("zero_rl", "actguide"):
                self.evaluate(p.out, variant, seeds, split)
                self.evaluate(p.pool, variant, seeds, split)
        for variant in p.ablations:
            self.evaluate(p.pool, variant, range(p.pool_ablation_seeds), "test", p.pool / "ablations" / episode_folder("test"))

    def dev_grid(self) -> dict[str, list]:
        """Every cell of every step 2 method with ``grid_seeds`` seeds on dev, and the half-budget zero RL; returns
        the choices."""
        p = self.plan
        base_dev = self.evaluate(p.step2 / "grid", "base", [0], "dev")
        groups = self.region_groups("dev")
        specs: list[TrainSpec] = []
        for method in STEP2_METHODS:
            for epochs, lr in grid_cells(method, p.grid):
                cell = p.cell(method, epochs, lr)
                setting_file = self.setting_file(cell, p.cell_setting(method, epochs, lr))
                specs += [(f"grid/{cell.name}/{s}", setting_file, method.variant, s,
                           run_folder(cell, method.variant, s)) for s in range(p.grid_seeds)]
        half = p.step2 / "half"
        first = p.grid[0]
        half_file = self.setting_file(half, {**p.cell_setting(STEP2_METHODS[0], *first),
                                             "budget": p.setting["budget"] // 2})
        specs.append(("half/zero_rl/0", half_file, "zero_rl", 0, run_folder(half, "zero_rl", 0)))
        self.train_many(specs, p.jobs)
        scores: dict[str, list[tuple[float, int, float]]] = {}
        for method in STEP2_METHODS:
            for epochs, lr in grid_cells(method, p.grid):
                records = self.evaluate(p.cell(method, epochs, lr), method.variant, range(p.grid_seeds), "dev")
                scores.setdefault(method.name, []).append((dev_score(records, groups), epochs, lr))
        self.evaluate(half, "zero_rl", [0], "dev")
        choices = {}
        for method in STEP2_METHODS:
            if method.chosen_by_rule and scores.get(method.name):
                best = max(scores[method.name], key=lambda c: c[0])  # the first cell wins a tie (the grid's order)
                choices[method.name] = [best[1], best[2]]
        rule = f"highest barrier + in-region unguided success on dev, mean over training seeds 0..{p.grid_seeds - 1}"
        atomic_write_json(p.step2 / "choices.json", {"rule": rule, "choices": choices, "base_dev_episodes": len(base_dev)},
                          sort_keys=False)
        return choices

    def region_groups(self, split: str) -> dict[str, set[str]]:
        from agents.actguide.regions import read_regions

        regions = read_regions(self.plan.regions_file(split))
        return {name: {t for t, g in regions.items() if g == name} for name in REGION_ORDER}

    def chosen_pair(self, choices: dict[str, list]) -> dict[str, Path]:
        """Every training seed of the chosen cells, evaluated on test; the barrier diagnostics and the alignment.
        Returns each chosen method's seed-0 run (what the diagnostics read)."""
        p = self.plan
        seed0 = {}
        chosen = [m for m in STEP2_METHODS if m.name in choices]
        self.train_many([(f"chosen/{m.name}/{s}", p.cell(m, *choices[m.name]) / "setting.json", m.variant, s,
                          run_folder(p.cell(m, *choices[m.name]), m.variant, s))
                         for m in chosen for s in range(p.seeds)], p.jobs)
        for method in chosen:
            cell = p.cell(method, *choices[method.name])
            self.evaluate(cell, method.variant, range(p.seeds), "test")
            seed0[method.name] = run_folder(cell, method.variant, 0)
        self.barrier_diagnostics(seed0)
        self.alignment(seed0)
        return seed0

    def barrier_diagnostics(self, seed0: dict[str, Path], root: Path | None = None, key: str = "barrier_test") -> None:
        """``steer-envs barrier`` of the base and seed 0 of the chosen pair on the test barrier group, under ``root``
        (default the step 2 folder; the command labels a model by its folder's name, so it reads them through links
        named after the methods)."""
        p = self.plan
        root = p.step2 if root is None else root
        diag = root / "diag"
        diag.mkdir(parents=True, exist_ok=True)
        models = {"base": p.base_dir, **seed0}
        for name, target in models.items():
            link = diag / name
            if link.is_symlink() or link.exists():
                link.unlink()
            os.symlink(target.resolve(), link)
        out = root / "barrier_test"
        argv = ["barrier", "--model", *(str(diag / n) for n in models), "--split", "test", "--tasks-per-benchmark",
                str(p.eval_tasks), "--seed", "0", "--regions-file", str(p.regions_file("test")), "--region", "barrier",
                "--out", str(out), *p.diag_args]
        self.commands[key] = cli_command(argv)
        inputs = {name: str(target.resolve()) for name, target in models.items()}
        if not cached(out / "barrier.json", inputs):
            print(f"$ {cli_command(argv)}", flush=True)
            if cli_main(argv) != 0:
                raise SystemExit(f"failed: {cli_command(argv)}")
            remember(out / "barrier.json", inputs)

    def alignment(self, seed0: dict[str, Path]) -> None:
        from benchmarks.actguide_alignment import main as alignment_main

        p = self.plan
        out = p.step2 / "align.json"
        models = {"base": p.base_dir, "zero_rl (setting)": run_folder(p.pool, "zero_rl", 0),
                  "actguide (setting)": run_folder(p.pool, "actguide", 0),
                  **{f"{name} (chosen)": run for name, run in seed0.items()}}
        argv = ["--setting", str(p.out / "pool_setting.json"), "--regions", str(p.regions_file("train")),
                *[a for name, run in models.items() for a in ("--model", f"{name}={run}")], "--out", str(out)]
        self.commands["alignment"] = "python -m benchmarks.actguide_alignment " + " ".join(map(shlex.quote, argv))
        inputs = {"models": [f"{name}={run.resolve()}" for name, run in models.items()]}
        if not cached(out, inputs):
            print(f"$ {self.commands['alignment']}", flush=True)
            alignment_main(argv)
            remember(out, inputs)

    def step2_ablations(self, choices: dict[str, list]) -> None:
        p = self.plan
        root = p.step2 / "ablations"
        specs: list[TrainSpec] = []
        for variant in p.ablations:
            method = STEP2_METHODS[0] if variant == "sft_rl" else STEP2_METHODS[1]
            setting_file = p.cell(method, *choices[method.name]) / "setting.json"
            specs += [(f"ablation/{variant}/{s}", setting_file, variant, s, run_folder(root, variant, s))
                      for s in range(p.ablation_seeds)]
        self.train_many(specs, p.jobs)
        for variant in p.ablations:
            self.evaluate(root, variant, range(p.ablation_seeds), "test")

    def run(self, argv_text: str, doc: Path, train_doc: Path) -> tuple[Path, Path]:
        start = time.perf_counter()
        self.base_and_regions()
        self.documented_setting()
        choices = self.dev_grid()
        self.chosen_pair(choices)
        self.step2_ablations(choices)
        seconds = add_time(self.plan.out / "times.json", "pipeline", time.perf_counter() - start)
        from agents.actguide.config import ActGuideConfig
        from agents.actguide.tasks import make_env, training_pool

        train_env = make_env(ActGuideConfig(**self.plan.setting))
        pool = {"kept": len(training_pool(train_env, ActGuideConfig(**self.plan.pool_setting))),
                "all": len(training_pool(train_env, ActGuideConfig(**self.plan.setting)))}
        atomic_write_json(self.plan.out / PAGE_FILE, {"command": argv_text, "plan": self.plan.to_json(), "choices": choices,
                                                      "commands": self.commands, "pool": pool, "seconds": seconds},
                          sort_keys=False)
        data = PAGE.load(self.plan.out)  # both pages read the same folders: read them once
        return PAGE.build(self.plan.out, doc, data), TRAIN_PAGE.build(self.plan.out, train_doc, data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/actguide_regions", help="run folders (default runs/actguide_regions)")
    parser.add_argument("--doc", default=str(REPO_ROOT / "docs" / "results_actguide_regions.md"))
    parser.add_argument("--train-doc", default=str(REPO_ROOT / "docs" / "results_actguide_regions_train.md"),
                        help="the same tables on the RL pool's own train tasks")
    parser.add_argument("--seeds", type=int, default=3, help="training seeds of every comparison (default 3)")
    parser.add_argument("--grid-seeds", type=int, default=3,
                        help="training seeds of each step 2 dev grid cell; the choice is by their mean (default 3)")
    parser.add_argument("--ablation-seeds", type=int, default=3,
                        help="training seeds of each ablation at the step 2 setting (default 3)")
    parser.add_argument("--jobs", type=int, default=1, help="trainings at a time, one core each (default 1)")
    parser.add_argument("--quick", action="store_true", help="a small dry run: tiny budgets, few tasks, 1 seed")
    args = parser.parse_args(argv)
    plan = RegionsPlan(Path(args.out), seeds=args.seeds, grid_seeds=args.grid_seeds, ablation_seeds=args.ablation_seeds,
                       jobs=args.jobs)
    if args.quick:
        plan.make_quick()
    doc, train_doc = Pipeline(plan).run(invocation("benchmarks.harness.actguide_regions_doc", argv), Path(args.doc),
                                        Path(args.train_doc))
    print(f"wrote {doc} and {train_doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
