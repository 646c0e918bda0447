"""``steer-envs demo``: the whole story on the embedded default, in one command (≤ 15 minutes on 2 CPU cores).

The demo is a small :class:`~.comparison.Comparison` on ``sim:default``:

1. Train the steering agent briefly (the steering trainer of docs/methods.md: state bank, counterfactual
   continuations, ranking loss + GRPO) on the train split.
2. Set every supervisor to ~1 intervention per task on a dev subset (τ of the trained and the untrained steerer
   and of filtered BC, p of random, SB3 PPO's intervention cost; the best fixed rule picks its note and decision
   on dev), giving filtered BC and SB3 PPO the steerer's measured training budget.
3. Evaluate them on a test subset on identical tasks and seeds; sweep each knob around its choice; print the
   table with its legend and the one-line verdict, and write ``comparison.md`` and the plots.

It trains each method once (the results page trains three times); everything lands in one resumable folder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .comparison import ComparisonPlan, run_comparison


@dataclass(frozen=True)
class DemoPlan:
    """The demo's budget. ``full``: the main job; ``quick``: a smoke version of the same steps."""

    limit: int
    seeds: int
    dev_limit: int
    train: str  # the RL steerer's trainer options
    ppo_costs: tuple[str, ...]
    max_probes: int
    curve_offsets: tuple[float, ...]
    spearman_tasks: int
    bc_pilot_tasks: int


FULL = DemoPlan(
    limit=30,
    seeds=2,
    dev_limit=8,
    train="G=4,N=3,bank_tasks=300,k=24,m=12",
    ppo_costs=("0", "0.05"),
    max_probes=7,
    curve_offsets=(-3.0, 0.0, 3.0),
    spearman_tasks=3,
    bc_pilot_tasks=20,
)
QUICK = DemoPlan(
    limit=2,
    seeds=1,
    dev_limit=2,
    train="G=2,N=2,bank_tasks=16,k=4,m=2",
    ppo_costs=("0",),
    max_probes=3,
    curve_offsets=(0.0, 3.0),
    spearman_tasks=1,
    bc_pilot_tasks=4,
)


def demo_plan(
    out: str | Path, plan: DemoPlan, limit: int | None, seeds: int | None, progress: bool, data_dir: str | None
) -> ComparisonPlan:
    return ComparisonPlan(
        out=Path(out),
        executor="sim:default",
        split="test",
        rl=f"steering_rl:{plan.train}",
        train_seeds=1,
        seeds=seeds or plan.seeds,
        limit=limit or plan.limit,
        dev_limit=plan.dev_limit,
        ppo_costs=plan.ppo_costs,
        max_probes=plan.max_probes,
        tolerance=0.1,
        curve_tau_offsets=plan.curve_offsets,
        curve_p_scales=(0.5, 1.0, 2.0),
        spearman_tasks=plan.spearman_tasks,
        bc_pilot_tasks=plan.bc_pilot_tasks,
        progress=progress,
        data_dir=data_dir,
    )


def prepare_search(data_dir: str | None = None) -> float:
    """Load the corpus and the BM25 index before any progress bar starts, saying so: on first use the index is
    built (tens of seconds), which the first bar would otherwise show as an hour-long ETA with no word why."""
    from steer_envs.paths import cache_dir
    from steer_envs.retrieval import make_retriever

    print(
        f"preparing: loading the corpus and the BM25 index (built once on first use, 10-60 s; cached in "
        f"{cache_dir('bm25s')})",
        flush=True,
    )
    start = time.perf_counter()
    retriever = make_retriever("bm25s", data_dir=data_dir)  # the shared instance the envs of this process use
    seconds = time.perf_counter() - start
    how = "loaded from the cache" if getattr(retriever, "loaded_from_cache", False) else "built and cached"
    print(f"    index {how} in {seconds:.0f}s", flush=True)
    return seconds


def run_demo(
    out: str | Path = "runs/demo",
    limit: int | None = None,
    seeds: int | None = None,
    quick: bool = False,
    progress: bool = True,
    data_dir: str | None = None,
) -> Path:
    plan = demo_plan(out, QUICK if quick else FULL, limit, seeds, progress, data_dir)
    print(
        f"steer-envs demo: sim:default, knobs chosen on {plan.dev_limit} dev tasks per benchmark, reported on "
        f"{plan.limit} test tasks per benchmark x {plan.seeds} seed(s), 1 training seed -> {plan.out}",
        flush=True,
    )
    prepare_search(plan.data_dir)
    start = time.perf_counter()
    run_comparison(plan)
    report = plan.out / "comparison.md"
    print("\n" + report.read_text(encoding="utf-8").split("### Rate curves")[0])
    print(f"demo finished in {time.perf_counter() - start:.0f}s; report: {report}; plots: {plan.out / 'plots'}")
    return report
