"""The skill-barrier study: ``python -m studies.actguide_barrier.run --out RUNS``.

Stages, in order (each resumable: a finished training run, evaluation log or diagnostic is skipped; an interrupted
training resumes from its checkpoint):

* ``barrier``: the base policy (zero RL on real train tasks outside the RL pool; it never sees the family), then
  zero RL from it at the full budget on the RL pool with the ``skill_chain`` family's train tasks added (3 seeds);
  unguided evaluation of the base and of each run on the family's test tasks and on the real benchmarks' test
  tasks; the base's Pass@32 on the family's dev and test tasks; ``steer-envs barrier`` (prefix-level Pass@K,
  ``M_t``, ``κ_t``, ``B_k``, ``|ΔLogit|``) on the family's test tasks for the base and zero RL.
* ``compare``: ACTGUIDE-RL from the same base with the same budget (3 seeds), evaluated the same way, and its
  barrier diagnostics.
* ``select``: the other candidates for the method's arm (:data:`.selection.CANDIDATES`: guided groups baselined by
  the unguided group they replace) at the same budget and seeds; zero RL, the base and every candidate evaluated on
  dev (the family's dev tasks and the real benchmarks' dev tasks); the pre-stated rule of :mod:`.selection` picks
  the method's arm from those dev logs alone (``OUT/choice.json``), and only then are the candidates evaluated on
  test.
* ``ablations``: the variants without the adaptive guider, without the fallback, without the mixed-policy loss,
  10% / 20% noisy plans, and SFT then RL (1 seed each).
* ``longer``: ACTGUIDE-RL and zero RL at twice the budget (1 seed each).

Everything is written under ``OUT``; :mod:`.summarize` turns it into the compact summary the page is made from
(``studies/actguide_barrier/results/summary.json``, then :mod:`.page`). ``--quick``: the same pipeline at a toy
size (minutes; not the page's numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.pages.actguide import default_base, default_setting
from steer_envs.atomic import atomic_write_json
from steer_envs.episodes import EpisodeRecord

from .selection import CANDIDATES

FAMILY = "skill_chain"
STAGES = ("barrier", "compare", "select", "ablations", "longer")
#: the ``longer`` stage: ACTGUIDE-RL and zero RL at this many times the budget (seed 0): is the method only slower?
LONGER = 2
MAIN = ("zero_rl", "actguide")
#: in the order they run (a pipeline cut short keeps the first ones, each trained, evaluated and scored)
ABLATIONS = ("sft_rl", "no_mixed", "no_adaptive", "no_fallback", "noise_10", "noise_20")
#: the candidates trained by the ``select`` stage (ACTGUIDE-RL itself is trained by ``compare``)
SELECT = tuple(c for c in CANDIDATES if c not in MAIN)
#: evaluation groups: the family's tasks, and the real benchmarks' (the in-region side: nothing of theirs changes)
GROUPS = ("family", "real")
#: written into a run folder once its training command finished (a rerun skips it)
DONE = "finished"


@dataclass
class Plan:
    """The study's sizes (the defaults are the page's)."""

    out: Path
    seeds: int = 3
    ablation_seeds: int = 1
    eval_split: str = "test"
    dev_split: str = "dev"  # where the method's arm is chosen (see :mod:`.selection`)
    family_eval_tasks: int = 0  # 0 = all the family's tasks of the split (40)
    real_eval_tasks: int = 40  # per real benchmark
    eval_rollouts: int = 8
    base_pass_k: int = 32  # the base's Pass@K on the family at a large K
    barrier_K: int = 8
    barrier_tasks: int = 0  # family tasks the diagnostics run on (0 = all)
    setting: dict = field(default_factory=lambda: {**default_setting(), "task_family": FAMILY})
    base: dict = field(default_factory=default_base)
    jobs: int = 2

    def make_quick(self) -> Plan:
        """The toy size of ``--quick``: tiny budgets, a few tasks, one seed, two rollouts."""
        self.seeds = self.ablation_seeds = 1
        small = {"tasks_per_benchmark": 2, "budget": 48, "batch_tasks": 2, "group_size": 4}
        self.setting.update(small)
        self.base.update(small, pretrain_tasks_per_benchmark=2)
        self.family_eval_tasks, self.real_eval_tasks, self.eval_rollouts, self.base_pass_k = 3, 1, 2, 4
        self.barrier_K, self.barrier_tasks = 2, 2
        return self


def _cli(argv: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "steer_envs", *map(str, argv)]


def shown(argv: Sequence[str]) -> str:
    """How a command is written on the page (``steer-envs ...``, the study's folder as ``RUNS``)."""
    return "steer-envs " + " ".join(shlex.quote(str(a)) for a in argv)


class Pipeline:
    def __init__(self, plan: Plan, progress: bool = True, stages: Sequence[str] = STAGES) -> None:
        self.plan, self.progress = plan, progress
        self.out = plan.out
        # one file per set of stages, so that two pipelines on different stages can run at once (summed on the page)
        self.times_path = self.out / ("times.json" if tuple(stages) == STAGES else f"times.{'+'.join(stages)}.json")
        self.times: dict[str, float] = json.loads(self.times_path.read_text()) if self.times_path.is_file() else {}
        self.commands: list[str] = []

    # -- bookkeeping ----------------------------------------------------------------------------------------
    def _log(self, text: str) -> None:
        if self.progress:
            print(text, flush=True)

    def _timed(self, key: str, fn) -> None:
        start = time.perf_counter()
        fn()
        self.times[key] = self.times.get(key, 0.0) + time.perf_counter() - start
        atomic_write_json(self.times_path, self.times)

    def _run(self, argv: Sequence[str]) -> None:
        self.commands.append(shown(argv))
        self._log("$ " + shown(argv))
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        subprocess.run(_cli(argv), check=True, env=env, stdout=subprocess.DEVNULL if not self.progress else None)

    # -- training -------------------------------------------------------------------------------------------
    def run_dir(self, variant: str, seed: int) -> Path:
        return self.out / "runs" / variant / f"seed{seed}"

    @property
    def base_dir(self) -> Path:
        return self.out / "runs" / "base"

    def _write_settings(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.out / "base.json", self.plan.base)
        atomic_write_json(self.out / "setting.json", self.plan.setting)
        atomic_write_json(
            self.out / "setting_longer.json", {**self.plan.setting, "budget": LONGER * self.plan.setting["budget"]}
        )
        atomic_write_json(self.out / "plan.json", {**asdict(self.plan), "out": "RUNS"})

    def train(self, config: str, variant: str, seed: int, out: Path, init: Path | None) -> None:
        if (out / DONE).is_file():
            return
        argv = ["train", "actguide", "--config", self.out / config, "--variant", variant, "--seed", seed]
        argv += ["--init-from", init] if init is not None else []
        argv += ["--out", out, "--no-progress"]
        resume = ["--resume"] if (out / "checkpoint.json").is_file() else []
        self._timed("training", lambda: self._run(argv + resume))
        (out / DONE).write_text("")

    def train_many(self, variants: Sequence[str], seeds: int) -> None:
        jobs = [(v, s) for v in variants for s in range(seeds)]
        with ThreadPoolExecutor(max_workers=max(1, self.plan.jobs)) as pool:
            list(
                pool.map(
                    lambda job: self.train("setting.json", job[0], job[1], self.run_dir(*job), self.base_dir), jobs
                )
            )

    # -- evaluation -----------------------------------------------------------------------------------------
    def eval_file(self, label: str, group: str, split: str, n: int) -> Path:
        return self.out / "eval" / f"{label}.{group}.{split}.n{n}.jsonl"

    def evaluate(self, run_dir: Path, label: str, group: str, split: str, n: int) -> Path:
        path = self.eval_file(label, group, split, n)
        if path.is_file():
            return path

        def work() -> None:
            records = evaluate_model(run_dir, label, group, split, n, self.plan)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(asdict(r)) + "\n" for r in records))
            tmp.replace(path)

        self._log(f"evaluating {label} on {group} {split} ({n} rollouts per task)")
        self._timed("evaluation", work)
        return path

    def evaluate_runs(self, variants: Sequence[str], seeds: int) -> None:
        p = self.plan
        for variant in variants:
            for seed in range(seeds):
                for group in GROUPS:
                    self.evaluate(
                        self.run_dir(variant, seed), f"{variant}.seed{seed}", group, p.eval_split, p.eval_rollouts
                    )

    # -- diagnostics ----------------------------------------------------------------------------------------
    def barrier(self, models: Sequence[Path], name: str) -> None:
        out = self.out / "barrier" / name
        if (out / "barrier.json").is_file():
            return
        p = self.plan
        argv = ["barrier", "--model", *models, "--task-family", FAMILY, "--split", p.eval_split]
        argv += ["--tasks-per-benchmark", p.barrier_tasks, "--K", p.barrier_K, "--out", out]
        self._timed("barrier", lambda: self._run(argv))

    def align(self, variants: Sequence[str], seeds: int, base: bool = False) -> None:
        """:func:`.alignment.skill_alignment` of the base and/or each run on the evaluation split's family tasks."""
        from .alignment import skill_alignment

        models = [("base", self.base_dir)] if base else []
        models += [(f"{v}.seed{s}", self.run_dir(v, s)) for v in variants for s in range(seeds)]
        for label, run_dir in models:
            path = self.out / "alignment" / f"{label}.{self.plan.eval_split}.json"
            if path.is_file():
                continue
            self._timed(
                "evaluation",
                lambda run_dir=run_dir, path=path: atomic_write_json(
                    path, skill_alignment(run_dir, self.plan.eval_split, self.plan.family_eval_tasks)
                ),
            )

    # -- stages ---------------------------------------------------------------------------------------------
    def stage_barrier(self) -> None:
        p = self.plan
        self.train("base.json", "zero_rl", 0, self.base_dir, None)
        for split in ("dev", p.eval_split):
            self.evaluate(self.base_dir, "base", "family", split, p.base_pass_k)
        for group in GROUPS:
            self.evaluate(self.base_dir, "base", group, p.eval_split, p.eval_rollouts)
        self.train_many(["zero_rl"], p.seeds)
        self.evaluate_runs(["zero_rl"], p.seeds)
        self.barrier([self.base_dir, self.run_dir("zero_rl", 0)], "base_zero_rl")
        self.align(["zero_rl"], p.seeds, base=True)

    def stage_compare(self) -> None:
        self.train_many(["actguide"], self.plan.seeds)
        self.evaluate_runs(["actguide"], self.plan.seeds)
        self.barrier([self.run_dir("actguide", 0)], "actguide")
        self.align(["actguide"], self.plan.seeds)

    def stage_select(self) -> None:
        from .selection import choose, dev_groups

        p = self.plan
        self.train_many(SELECT, p.seeds)
        for group in GROUPS:
            self.evaluate(self.base_dir, "base", group, p.dev_split, p.eval_rollouts)
            for variant in ("zero_rl", *CANDIDATES):
                for seed in range(p.seeds):
                    self.evaluate(
                        self.run_dir(variant, seed), f"{variant}.seed{seed}", group, p.dev_split, p.eval_rollouts
                    )
        choice = choose(dev_groups(self.out, p.dev_split, p.eval_rollouts, p.seeds))
        atomic_write_json(self.out / "choice.json", choice.to_dict())
        self._log(f"chosen on {p.dev_split}: {choice.chosen}")
        self.evaluate_runs(SELECT, p.seeds)
        self.align(SELECT, p.seeds)

    def stage_ablations(self) -> None:
        step = max(1, self.plan.jobs)
        for i in range(0, len(ABLATIONS), step):  # trained `jobs` at a time, each batch evaluated before the next
            batch = ABLATIONS[i : i + step]
            self.train_many(batch, self.plan.ablation_seeds)
            self.evaluate_runs(batch, self.plan.ablation_seeds)
            self.align(batch, self.plan.ablation_seeds)

    def stage_longer(self) -> None:
        jobs = [(v, 0) for v in MAIN]
        with ThreadPoolExecutor(max_workers=max(1, self.plan.jobs)) as pool:
            list(
                pool.map(
                    lambda job: self.train(
                        "setting_longer.json", job[0], job[1], self.run_dir(f"{job[0]}_longer", job[1]), self.base_dir
                    ),
                    jobs,
                )
            )
        longer = [f"{v}_longer" for v in MAIN]
        self.evaluate_runs(longer, 1)
        self.align(longer, 1)

    def run(self, stages: Sequence[str]) -> None:
        self._write_settings()
        for stage in stages:
            getattr(self, f"stage_{stage}")()
        atomic_write_json(self.out / "plan.json", {**asdict(self.plan), "out": "RUNS"})
        commands = self.out / "commands.txt"
        known = commands.read_text().splitlines() if commands.is_file() else []
        fresh = [c.replace(str(self.out), "RUNS") for c in self.commands]
        commands.write_text("\n".join(dict.fromkeys(known + fresh)) + "\n")


def planned_commands(plan: Plan, stages: Sequence[str] = STAGES) -> list[str]:
    """Every ``steer-envs`` command the stages run, in order, with the pipeline's folder written as ``RUNS`` (the
    page lists them; evaluations and the alignment replay run inside the pipeline: ``evaluate_model``,
    ``alignment.skill_alignment``)."""
    runs = Path("RUNS")

    def train(config: str, variant: str, seed: int, out: Path, init: bool = True) -> str:
        argv = ["train", "actguide", "--config", runs / config, "--variant", variant, "--seed", seed]
        argv += ["--init-from", runs / "runs" / "base"] if init else []
        return shown([*argv, "--out", out, "--no-progress"])

    def barrier(models: Sequence[Path], name: str) -> str:
        argv = ["barrier", "--model", *models, "--task-family", FAMILY, "--split", plan.eval_split]
        return shown([*argv, "--tasks-per-benchmark", plan.barrier_tasks, "--K", plan.barrier_K, "--out", name])

    def run_dir(variant: str, seed: int) -> Path:
        return runs / "runs" / variant / f"seed{seed}"

    out: list[str] = []
    if "barrier" in stages:
        out.append(train("base.json", "zero_rl", 0, runs / "runs" / "base", init=False))
        out += [train("setting.json", "zero_rl", s, run_dir("zero_rl", s)) for s in range(plan.seeds)]
        out.append(barrier([runs / "runs" / "base", run_dir("zero_rl", 0)], str(runs / "barrier" / "base_zero_rl")))
    if "compare" in stages:
        out += [train("setting.json", "actguide", s, run_dir("actguide", s)) for s in range(plan.seeds)]
        out.append(barrier([run_dir("actguide", 0)], str(runs / "barrier" / "actguide")))
    if "select" in stages:
        out += [train("setting.json", v, s, run_dir(v, s)) for v in SELECT for s in range(plan.seeds)]
    if "ablations" in stages:
        out += [train("setting.json", v, s, run_dir(v, s)) for v in ABLATIONS for s in range(plan.ablation_seeds)]
    if "longer" in stages:
        out += [train("setting_longer.json", v, 0, run_dir(f"{v}_longer", 0)) for v in MAIN]
    return out


def evaluate_model(run_dir: Path, label: str, group: str, split: str, n: int, plan: Plan) -> list[EpisodeRecord]:
    """``n`` unguided rollouts per task of ``group`` (the family's tasks of ``split``, or the real benchmarks')."""
    from agents.actguide.config import ActGuideConfig
    from agents.actguide.evaluate import evaluate
    from agents.actguide.tasks import make_env, sample_tasks
    from agents.actguide.trainer import load_learner

    learner, meta = load_learner(run_dir)
    config = ActGuideConfig.from_dict(meta["config"], where=str(run_dir))
    if group == "family":
        config.task_family, config.benchmarks = FAMILY, [FAMILY]
        per_benchmark = plan.family_eval_tasks
    else:
        config.task_family, config.benchmarks = None, None
        per_benchmark = plan.real_eval_tasks
    env = make_env(config, split=split)
    ids = sample_tasks(env, per_benchmark, 0)
    return evaluate(learner, env, ids, n, label, seed=0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder of every run, evaluation log and diagnostic")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, among {', '.join(STAGES)}")
    parser.add_argument("--jobs", type=int, default=2, help="training runs at once")
    parser.add_argument("--ablation-seeds", type=int, default=None, help="training seeds per ablation (default: 1)")
    parser.add_argument("--quick", action="store_true", help="the toy size (a smoke run, not the page's numbers)")
    parser.add_argument("--summary", default=None, help="write the compact summary here (default: none)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    plan = Plan(Path(args.out), jobs=args.jobs)
    if args.quick:
        plan.make_quick()
    if args.ablation_seeds is not None:
        plan.ablation_seeds = args.ablation_seeds
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stage(s) {unknown}; stages: {', '.join(STAGES)}")
    Pipeline(plan, progress=not args.quiet, stages=stages).run(stages)
    if args.summary:
        from .summarize import EPISODES_FILE, summarize

        to = Path(args.summary)
        atomic_write_json(to, summarize(plan.out, episodes_to=to.parent / EPISODES_FILE))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
