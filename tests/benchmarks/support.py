"""What the results-page tests build alike: a tiny steering-RL method and the results generator's arguments for a
small run."""

from __future__ import annotations

from pathlib import Path

#: a steering-RL method small enough to train in a test
TINY = "steering_rl:G=2,N=2,bank_tasks=12,k=4,m=2"
#: the results page's rows without the two slow baselines, the curves and the Spearman section, own-rate rows off
ONLY_FAST_ROWS = (
    *("--without", "filtered_bc", "--without", "sb3_ppo"),
    *("--no-curves", "--spearman-tasks", "0", "--own-rate-rows"),
)


def results_doc_argv(out: Path, doc: Path, *extra: str, train_seeds: int, max_probes: int, llm_limit: int) -> list[str]:
    """``benchmarks.harness.results_doc`` arguments of a small run writing ``out`` and the page ``doc``: the default
    simulated profile, one task and one seed per benchmark (nq, musique) on test and dev, :data:`TINY` as the RL
    method, one curve seed and one Spearman task, no progress bars, the summaries next to ``out``
    (:func:`summaries_of`); ``extra``: further options."""
    return [
        *("--out", str(out), "--doc", str(doc), "--summaries", str(summaries_of(out)), "--profiles", "sim:default"),
        *("--limit", "1", "--dev-limit", "1", "--seeds", "1", "--train-seeds", str(train_seeds), "--method", TINY),
        *("--max-probes", str(max_probes), "--curve-seeds", "1", "--spearman-tasks", "1"),
        *("--llm-limit", str(llm_limit), "--benchmarks", "nq", "musique", "--no-progress", *extra),
    ]


def summaries_of(out: Path) -> Path:
    """Where :func:`results_doc_argv` writes the compact summaries the page is built from (beside the run folders)."""
    return Path(out).parent / "summaries"
