"""Failed episodes in the harness's statistics: an episode a service failure truncated is counted,
never averaged as a 0; paired analyses drop its pair from every row; a table without failures is unchanged."""

from __future__ import annotations

import pytest

from benchmarks.harness.stats import macro_mean, paired_gain, summarize
from benchmarks.harness.tables import comparison_table, results_table
from steer_envs.episodes import EpisodeRecord

BENCHMARKS = ["nq", "hotpotqa"]


def _records(method: str, f1s: dict[tuple[str, int], float], failed: set[tuple[str, int]] = frozenset()):
    out = []
    for (task, seed), f1 in f1s.items():
        bad = (task, seed) in failed
        out.append(
            EpisodeRecord(
                method=method,
                task_id=task,
                benchmark=task.split("/")[0],
                seed=seed,
                f1=0.0 if bad else f1,
                em=0.0,
                reward=0.0 if bad else f1,
                interventions=1,
                executor_turns=2,
                failure="backend: server gone" if bad else None,
                failed=bad,
            )
        )
    return out


PAIRS = [(f"{b}/{i}", s) for b in BENCHMARKS for i in range(4) for s in range(2)]
REF = {p: 0.25 * (k % 4) for k, p in enumerate(PAIRS)}
GOOD = {p: min(1.0, v + 0.5) for p, v in REF.items()}


def test_failed_episodes_and_their_pairs_leave_every_mean_and_interval():
    lost = {("nq/0", 1), ("hotpotqa/2", 0)}
    ref = _records("no_supervision", REF)
    good = _records("steering_rl", GOOD, failed=lost)
    summaries = summarize({"no_supervision": ref, "steering_rl": good}, BENCHMARKS, resamples=200)
    none, rl = summaries
    assert (none.failed, rl.failed) == (0, 2) and none.dropped_pairs == rl.dropped_pairs == 2
    kept_ref = [r for r in ref if (r.task_id, r.seed) not in lost]
    kept_rl = [r for r in good if (r.task_id, r.seed) not in lost]
    # the reference row loses the pairs too: its mean is over the pairs both rows finished
    assert none.avg_f1 == pytest.approx(100 * macro_mean(kept_ref, BENCHMARKS))
    assert rl.avg_f1 == pytest.approx(100 * macro_mean(kept_rl, BENCHMARKS))
    assert macro_mean(good, BENCHMARKS) == pytest.approx(macro_mean(kept_rl, BENCHMARKS))  # failed left out here too
    biased = sum(r.f1 for r in good) / len(good)  # what reading the failures as 0s gives (pooled, for contrast)
    assert biased < macro_mean(kept_rl, BENCHMARKS)
    _, interval = paired_gain(kept_rl, kept_ref, BENCHMARKS, resamples=200)
    assert rl.avg_gain == interval  # the same paired bootstrap as on the surviving pairs
    assert rl.interventions_per_task == pytest.approx(1.0) and rl.n_tasks == 8
    table = results_table(summaries, BENCHMARKS)
    header, _, first, second = table.splitlines()[:4]
    assert header.endswith("| Failed |") and first.endswith("| 0 |") and second.endswith("| 2 |")
    assert "steering_rl 2" in table and "left out of every row's means" in table
    wide = comparison_table(summaries, BENCHMARKS, {}, {})
    assert "| Failed |" in wide.splitlines()[0] and "Failed episodes" in wide


def test_a_table_without_failures_is_unchanged():
    summaries = summarize(
        {"no_supervision": _records("no_supervision", REF), "steering_rl": _records("steering_rl", GOOD)},
        BENCHMARKS,
        resamples=100,
    )
    table = results_table(summaries, BENCHMARKS)
    assert "Failed" not in table and table.splitlines()[0].endswith("| Turns/task |")
    assert all(s.failed == 0 and s.dropped_pairs == 0 for s in summaries)


def test_rows_with_nothing_scored_have_no_f1_anywhere():
    """Every pair failed in one row, so no row scores a task: no F1 in the tables (dashes), null in the stored
    comparison and NaN when read back, never 0.0; no row can take the star."""
    import json
    import math

    from benchmarks.harness.comparison import _summary_dict, summary_from_dict
    from benchmarks.harness.summary_rows import changed_rows

    by_method = {
        "no_supervision": _records("no_supervision", REF, failed=set(PAIRS)),
        "drift_rule": _records("drift_rule", GOOD),
    }
    summaries = summarize(by_method, BENCHMARKS, resamples=50)
    assert [(s.scored, s.n_tasks, s.avg_gain, s.failed) for s in summaries] == [
        (False, 0, None, len(PAIRS)),
        (False, 0, None, 0),
    ]
    rows = [line for line in results_table(summaries, BENCHMARKS).splitlines() if line.startswith("| no_sup")]
    assert rows[0].split("|")[2:7] == [" – "] * 5  # nq, hotpotqa, avg F1, int./task, turns/task
    assert "0.0" not in comparison_table(summaries, BENCHMARKS, {}, {}).split("Failed episodes")[0]
    stored = [json.loads(json.dumps(_summary_dict(s), allow_nan=False)) for s in summaries]
    assert stored[0]["avg_f1"] is None and math.isnan(summary_from_dict(stored[0]).avg_f1)
    assert changed_rows({"summaries": stored}, {"summaries": stored}) == []
