"""``steer-envs demo``: the whole story on the embedded default, in one command (≤ 15 minutes on 2 CPU cores).

1. Train the steering agent briefly (PAPERS.md A's trainer: state bank, counterfactual continuations, ranking
   loss + GRPO) on the train split of ``sim:default``.
2. Evaluate it on a test subset next to the baselines (no supervision, random at the steerer's measured rate,
   always, the rule-based drift detector, zero-shot steering, planning and verification zero-shot and
   RL-trained with the same trainer budget, filtered behaviour cloning, SB3 PPO) on identical tasks and seeds.
3. Sweep τ on the trained steerer (no retraining), print the table, write ``report.md`` and the plots.

Everything lands in one resumable run folder: rerunning the command after an interruption continues.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from steer_envs.data import BENCHMARKS

from .config import EvalConfig
from .report import write_report
from .runfolder import RunFolder
from .runner import evaluate, write_summary
from .sweeps import with_option


@dataclass(frozen=True)
class DemoPlan:
    """The demo's budget. ``full``: the main job; ``quick``: a one-minute smoke version of the same steps."""

    limit: int
    seeds: int
    train: str            # trainer options shared by steering / planning / verification RL (same budget)
    ppo_timesteps: int
    bc_tasks: int
    taus: tuple[float, ...] = (0.3, 0.7)

    def methods(self) -> list[tuple[str, str]]:
        """(step title, method spec) in evaluation order (random comes after the steerer it matches)."""
        rl = f"steering_rl:{self.train}"
        return [
            ("no supervision (reference)", "no_supervision"),
            ("RL-trained steering (trains first)", rl),
            ("random intervention at the steerer's rate", "random:match=steering_rl"),
            ("always intervene", "always"),
            ("rule-based drift detector", "drift_rule"),
            ("zero-shot steering (untrained encoder steerer)", "steering_zero_shot"),
            ("planning, zero-shot", "planning_zero_shot"),
            ("planning, RL-trained (same trainer and budget)", f"planning_rl:{self.train}"),
            ("verification, zero-shot", "verification_zero_shot"),
            ("verification, RL-trained (same trainer and budget)", f"verification_rl:{self.train}"),
            ("filtered behaviour cloning", f"filtered_bc:tasks={self.bc_tasks}"),
            ("Stable-Baselines3 PPO on hashed features", f"sb3_ppo:timesteps={self.ppo_timesteps}"),
        ] + [(f"τ sweep: steering_rl at τ={t:g}", with_option(rl, "tau", f"{t:g}")) for t in self.taus]


FULL = DemoPlan(limit=30, seeds=2, train="G=4,N=3,bank_tasks=300,k=24,m=12", ppo_timesteps=4000, bc_tasks=150)
QUICK = DemoPlan(limit=2, seeds=1, train="G=2,N=2,bank_tasks=16,k=4,m=2", ppo_timesteps=256, bc_tasks=8)


def prepare_search(data_dir: str | None = None) -> float:
    """Load the corpus and the BM25 index before any progress bar starts, saying so: on first use the index is
    built (tens of seconds), which the first bar would otherwise show as an hour-long ETA with no word why."""
    from steer_envs.paths import cache_dir
    from steer_envs.retrieval import make_retriever

    print(f"preparing: loading the corpus and the BM25 index (built once on first use, 10-60 s; cached in "
          f"{cache_dir('bm25s')})", flush=True)
    start = time.perf_counter()
    retriever = make_retriever("bm25s", data_dir=data_dir)  # the shared instance the envs of this process use
    seconds = time.perf_counter() - start
    how = "loaded from the cache" if getattr(retriever, "loaded_from_cache", False) else "built and cached"
    print(f"    index {how} in {seconds:.0f}s", flush=True)
    return seconds


def run_demo(out: str | Path = "runs/demo", limit: int | None = None, seeds: int | None = None, quick: bool = False,
             progress: bool = True, data_dir: str | None = None) -> Path:
    plan = QUICK if quick else FULL
    config = EvalConfig(executor="sim:default", benchmarks=BENCHMARKS, split="test",
                        seeds=seeds or plan.seeds, limit=limit or plan.limit, data_dir=data_dir)
    folder = RunFolder(out, config)
    n_tasks = len(folder.config.tasks())
    steps = plan.methods()
    print(f"steer-envs demo: {n_tasks} test tasks x {folder.config.seeds} seed(s) on sim:default, "
          f"{len(steps)} evaluations -> {folder.root}")
    prepare_search(folder.config.data_dir)
    start = time.perf_counter()
    for i, (title, spec) in enumerate(steps, 1):
        t0 = time.perf_counter()
        print(f"\n[{i}/{len(steps)}] {title}: {spec}", flush=True)
        outcome = evaluate(folder, spec, progress=progress)
        print(f"    {outcome.ran} episodes run, {outcome.skipped} reused, {time.perf_counter() - t0:.0f}s", flush=True)
    write_summary(folder)
    report = write_report(folder.root)
    print("\n" + report.read_text(encoding="utf-8").split("## Plots")[0])
    print(f"demo finished in {time.perf_counter() - start:.0f}s; report: {report}; plots: {folder.plots_dir}")
    return report
