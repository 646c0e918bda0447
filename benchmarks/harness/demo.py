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
from pathlib import Path

from .comparison import ComparisonPlan, run_comparison
from .protocols import get_protocol, plan_for


def demo_plan(
    out: str | Path, quick: bool, limit: int | None, seeds: int | None, progress: bool, data_dir: str | None
) -> ComparisonPlan:
    """The demo's comparison: the ``demo`` protocol (``demo-quick`` for the smoke version), ``limit``/``seeds``
    overriding its task count and seeds."""
    return plan_for(
        "demo-quick" if quick else "demo", out, limit=limit, seeds=seeds, progress=progress, data_dir=data_dir
    )


def rerun_command(plan: ComparisonPlan) -> str:
    """The ``steer-envs compare`` command that reproduces the demo's table (``--method`` adds a contender)."""
    parts = ["steer-envs compare", f"--protocol {plan.protocol}", f"--out {plan.out}"]
    preset = get_protocol(plan.protocol).plan
    parts += [f"--{k} {getattr(plan, k)}" for k in ("limit", "seeds") if getattr(plan, k) != preset[k]]
    return " ".join(parts)


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
    plan = demo_plan(out, quick, limit, seeds, progress, data_dir)
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
    print(
        f"to rerun this table with your own method beside the built-in rows: {rerun_command(plan)} --method "
        "YOUR_SPEC (docs/extending.md)"
    )
    return report
