"""The leaderboard's numbers: each comparison's rows read from its compact summary (``summary.json`` beside
``episodes.jsonl.gz``), with the aggregates the RL field reports for few seeds (``rliable``).

Why beside the paired intervals: the suite's primary test is the paired, benchmark-stratified interval of a row
against another (:mod:`.stats`); a reader coming from deep RL also expects the interquartile mean (IQM) of normalised
scores with stratified bootstrap intervals, the probability of improvement and a performance profile
(Agarwal et al., 2021). They are computed here from the same stored episodes, by the library the field uses.

A *run* of a row is one (training seed, evaluation seed) pair: its score on a benchmark is its mean F1 over the
benchmark's tasks. A row's score matrix is runs x benchmarks. Scores are normalised per benchmark so that no
supervision is 0 and the profile's oracle (it reads hidden state: the headroom) is 1.
"""

from __future__ import annotations

import json
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from steer_envs.errors import SteerEnvsError
from steer_envs.extras import import_extra

from .results_summary import EPISODES_FILE, SUMMARY_FILE, read_episodes
from .runner import REFERENCE

#: bootstrap resamples of every IQM interval, and the fixed seed that makes a rebuilt page equal the committed one
IQM_REPS = 2000
BOOTSTRAP_SEED = 0
#: normalised-score thresholds of the performance profile, and the resamples of its bands (a plot's band, not a
#: reported interval: fewer suffice)
PROFILE_TAUS = tuple(float(t) for t in np.linspace(-0.5, 1.5, 41))
PROFILE_REPS = 300


@dataclass
class Entry:
    """One comparison's summary and its episodes: a table of the leaderboard (``source``: where it was read)."""

    summary: dict[str, Any]
    episodes: list[dict[str, Any]]
    source: Path

    @property
    def protocol(self) -> str:
        return str(self.summary["plan"].get("protocol", "custom"))

    @property
    def executor(self) -> str:
        return str(self.summary["executor"])

    @property
    def reference(self) -> str:
        return str(self.summary["plan"].get("reference") or REFERENCE)

    @property
    def bar(self) -> str:
        return str(self.summary["plan"].get("bar") or "")

    def setting_key(self) -> tuple:
        """What must be equal for two entries' rows to share one table: the protocol, the setting card (corpus,
        executor, tasks, seeds, training seeds) and what the protocol fixes on dev (target, tolerances, dev tasks
        and seeds), never the commit."""
        card, plan = self.summary["card"], self.summary["plan"]
        keys = ("corpus_sha", "retriever", "topk", "executor", "executor_hash", "split", "tasks", "seeds", "max_turns",
                "train_seeds")  # fmt: skip
        fixed = ("target", "tolerance", "train_knob_tolerance", "budget_tolerance", "dev_limit", "dev_seeds")
        return (
            self.protocol,
            *(json.dumps(card.get(k), sort_keys=True) for k in keys),
            *(json.dumps(plan.get(k)) for k in fixed),
        )


def summary_path(path: str | Path) -> Path:
    """A summary file from what a user names: the file, its folder, or a ``compare`` run folder (whose
    ``leaderboard/<profile>/summary.json`` it finds when there is exactly one)."""
    path = Path(path)
    if path.is_file():
        return path
    if (path / SUMMARY_FILE).is_file():
        return path / SUMMARY_FILE
    found = sorted(path.glob(f"leaderboard/*/{SUMMARY_FILE}"))
    if len(found) == 1:
        return found[0]
    raise SteerEnvsError(
        f"{path}: no {SUMMARY_FILE} there"
        + (f" (several: {', '.join(str(f) for f in found)}; name one)" if found else "")
        + ". Name a summary written by `steer-envs compare` (OUT/leaderboard/<profile>/summary.json) or its folder."
    )


def read_entry(path: str | Path) -> Entry:
    file = summary_path(path)
    summary = json.loads(file.read_text(encoding="utf-8"))
    missing = [k for k in ("executor", "plan", "card", "rows", "summaries", "episodes") if k not in summary]
    if missing:
        raise SteerEnvsError(f"{file}: not a comparison summary (missing {', '.join(missing)})")
    episodes = file.parent / summary["episodes"].get("file", EPISODES_FILE)
    if not episodes.is_file():
        raise SteerEnvsError(f"{file}: its episodes {episodes.name} are not beside it")
    return Entry(summary, read_episodes(episodes), file)


def score_matrices(entry: Entry) -> dict[str, np.ndarray]:
    """Row name -> runs x benchmarks mean F1 (x100): one run per (label, evaluation seed); failed episodes (a
    service failure is not an outcome) are left out of the means."""
    benchmarks = list(entry.summary["benchmarks"])
    sums: dict[str, dict[tuple[str, int], dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for e in entry.episodes:
        if e.get("failed"):
            continue
        sums[e["row"]][(e["label"], int(e["seed"]))][e["benchmark"]].append(float(e["f1"]))
    out = {}
    for row, runs in sums.items():
        matrix = [[100.0 * float(np.mean(by_bench[b])) if by_bench.get(b) else np.nan for b in benchmarks] for
                  by_bench in runs.values()]  # fmt: skip
        out[row] = np.asarray(matrix, dtype=float)
    return out


def normaliser(
    matrices: dict[str, np.ndarray], reference: str, ceiling: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per benchmark: the reference row's mean (score 0), the ceiling row's mean (score 1), and which benchmarks
    can be normalised (the ceiling scores above the reference there; the others are left out of the aggregates,
    and the page names them)."""
    for name in (reference, ceiling):
        if name not in matrices:
            raise SteerEnvsError(
                f"the leaderboard normalises by {reference!r} (0) and {ceiling!r} (1); this entry has no {name!r} row"
            )
    low, high = np.nanmean(matrices[reference], axis=0), np.nanmean(matrices[ceiling], axis=0)
    usable = high - low > 0
    if not usable.any():
        raise SteerEnvsError(f"{ceiling!r} scores above {reference!r} on no benchmark: nothing to normalise by")
    return low, high, usable


@dataclass
class Aggregates:
    """A row's field aggregates: IQM of the normalised score with its 95% stratified bootstrap interval, and the
    probability of improvement over each reference row."""

    iqm: float
    iqm_low: float
    iqm_high: float
    improvement: dict[str, float] = field(default_factory=dict)


def _rliable():
    library = import_extra("rliable.library", "leaderboard", "the leaderboard's aggregates")
    metrics = import_extra("rliable.metrics", "leaderboard", "the leaderboard's aggregates")
    return library, metrics


@contextmanager
def seeded_global_numpy(seed: int = BOOTSTRAP_SEED) -> Iterator[None]:
    """rliable's bootstrap draws its resamples from NumPy's global generator (not the ``random_state`` it is
    given): seed it for the call, so every row's interval is the same on every rebuild whatever rows precede it,
    and give the caller's global state back afterwards."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():  # rliable hands arch a RandomState keyword that arch deprecates
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        np.random.set_state(state)


def aggregates(normalised: dict[str, np.ndarray], references: Sequence[str]) -> dict[str, Aggregates]:
    """IQM (rliable's stratified bootstrap over runs within benchmarks, :data:`IQM_REPS` resamples, seeded per
    row) and probability of improvement over every row of ``references`` present."""
    library, metrics = _rliable()
    point, interval = {}, {}
    for name, scores in normalised.items():
        with seeded_global_numpy():
            one_point, one_interval = library.get_interval_estimates(
                {name: scores}, lambda s: np.array([metrics.aggregate_iqm(s)]), reps=IQM_REPS
            )
        point[name], interval[name] = one_point[name], one_interval[name]
    out = {}
    for name, scores in normalised.items():
        improvement = {
            ref: float(metrics.probability_of_improvement(scores, normalised[ref]))
            for ref in references
            if ref in normalised and ref != name
        }
        out[name] = Aggregates(
            float(point[name][0]), float(interval[name][0][0]), float(interval[name][1][0]), improvement
        )
    return out


def performance_profile(normalised: dict[str, np.ndarray], names: Sequence[str], title: str, path: Path) -> Path:
    """The fraction of runs x benchmarks whose normalised score exceeds each threshold (rliable's score
    distribution), one line per row with its 95% band; PNG at ``path``."""
    from .plots import _save, plt

    library, _ = _rliable()
    taus = np.asarray(PROFILE_TAUS)
    chosen = {n: normalised[n] for n in names}
    with seeded_global_numpy():
        profiles, bands = library.create_performance_profile(chosen, taus, reps=PROFILE_REPS)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name in names:
        (line,) = ax.plot(taus, profiles[name], label=name, lw=1.6)
        ax.fill_between(taus, bands[name][0], bands[name][1], color=line.get_color(), alpha=0.15)
    ax.axvline(0, color="#444", lw=0.8, ls="--")
    ax.axvline(1, color="#444", lw=0.8, ls=":")
    ax.set_xlabel("normalised score τ (0: no supervision, 1: oracle)")
    ax.set_ylabel("fraction of runs x benchmarks with score > τ")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower left")
    path.parent.mkdir(parents=True, exist_ok=True)
    return _save(fig, path)
