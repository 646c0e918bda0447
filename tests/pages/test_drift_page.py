"""``docs/results_drift.md`` is rebuilt from the level summaries alone: the ladder table with its intervals, the
verdict read from the rows, the command, and the leak table; a missing summary is named."""

from __future__ import annotations

import json

import pytest

from benchmarks.pages import get_page
from benchmarks.pages.ladders import reading
from steer_envs.errors import SteerEnvsError


def _iv(mean, low, high):
    return {"mean": mean, "low": low, "high": high}


LADDER = {
    "config": {
        "limit": 2,
        "seeds": 2,
        "dev_limit": 2,
        "dev_seeds": 1,
        "train_tasks": 3,
        "train_forks": 2,
        "planner_forks": 2,
        "oracle_lookahead": 2,
    },
    "rows": [
        {"rung": "none", "f1": 40.0, "interventions_per_task": 0.0, "turns_per_task": 5.0, "failed": 0},
        {
            "rung": "best_fixed_rule",
            "f1": 45.0,
            "gain": _iv(5.0, 1.0, 9.0),
            "interventions_per_task": 1.0,
            "turns_per_task": 4.0,
            "failed": 0,
        },
        {
            "rung": "learnable_ceiling",
            "f1": 55.0,
            "gain": _iv(15.0, 10.0, 20.0),
            "vs_best_fixed_rule": _iv(10.0, 6.0, 14.0),
            "interventions_per_task": 0.9,
            "turns_per_task": 3.0,
            "failed": 0,
        },
        {
            "rung": "oracle",
            "f1": 70.0,
            "gain": _iv(30.0, 25.0, 35.0),
            "vs_best_fixed_rule": _iv(25.0, 20.0, 30.0),
            "interventions_per_task": 1.1,
            "turns_per_task": 3.0,
            "failed": 0,
        },
    ],
    "choices": {
        "best_fixed_rule": {"option": "refocus", "at": 3},
        "learnable_ceiling": {"learner": "hgb", "threshold": 0.05},
        "train_decisions": 123,
    },
    "timings_s": {"test: none": 60.0, "train: fork-measured gains": 120.0},
}


def test_page_rebuilds_from_the_level_summaries(tmp_path):
    level = tmp_path / "drift1"
    level.mkdir()
    (level / "ladder.json").write_text(json.dumps(LADDER))
    (level / "ladder.md").write_text("*Setting: split **test**; commit `abc1234`.*\n\n| rung |\n")
    (level / "run.json").write_text(
        json.dumps({"command": "steer-envs headroom --executor sim:drift1", "test_episodes": 8})
    )
    (level / "leak.md").write_text("| hidden state | difference |\n|---|---|\n| any drift | +0.001 |")
    (level / "leak_run.json").write_text(json.dumps({"command": "python -m benchmarks.leak_test", "wall_s": 600.0}))
    (tmp_path / "drift3").mkdir()  # a level with its leak test only
    (tmp_path / "drift3" / "leak.md").write_text("| any drift | +0.002 |")
    (tmp_path / "drift3" / "leak_run.json").write_text(json.dumps({"command": "leak3", "wall_s": 60.0}))
    doc = get_page("results_drift").build(tmp_path, tmp_path / "page.md")
    text = doc.read_text(encoding="utf-8")
    assert "## `sim:drift1`" in text and "Synthetic" in text and "commit `abc1234`" in text
    assert "| best fixed rule (`refocus@3`) | 45.0 | +5.0 [+1.0, +9.0] |" in text
    assert "+10.0 [+6.0, +14.0]" in text and "123 train decisions" in text and "8 paired test episodes" in text
    assert "(met: ≥ +5 with the interval above 0)" in text and "| any drift | +0.001 |" in text
    assert "steer-envs headroom --executor sim:drift1" in text and "3.0 min" in text
    assert "## `sim:drift3`" in text and "No headroom ladder is recorded" in text and "| any drift | +0.002 |" in text
    assert "(`leak3`, 1.0 min)" in text


def test_reading_says_not_met_when_the_interval_reaches_zero():
    rows = json.loads(json.dumps(LADDER))
    rows["rows"][2]["vs_best_fixed_rule"] = _iv(6.0, -0.5, 12.0)
    assert "not met" in reading(rows)


def test_a_missing_summary_is_named(tmp_path):
    (tmp_path / "drift2").mkdir()
    (tmp_path / "drift2" / "run.json").write_text("{}")
    with pytest.raises(SteerEnvsError, match="drift2/ladder.json is missing"):
        get_page("results_drift").build(tmp_path, tmp_path / "page.md")


def _variant(name: str, gain: float) -> dict:
    interval = {"mean": gain, "low": gain - 1, "high": gain + 1}
    return {
        "variant": name,
        "dev": {"avg_gain": interval, "interventions_per_task": 1.0},
        "spearman_dev": {"within": 0.1, "across": 0.2},
        "seconds": 60.0,
        "commit": "abc1234",
    }


def test_the_diagnosis_shows_every_variant_the_rule_and_the_test_only_when_a_variant_won_on_dev():
    from benchmarks.pages.drift import diagnosis_markdown

    data = {
        "executor": "sim:drift2",
        "variants": {"paper": _variant("paper", 0.5), "rank_any": _variant("rank_any", 2.0)},
        "rule": "the highest dev gain",
        "chosen": "paper",
        "command": "python -m studies.drift_diagnosis.run --test",
    }
    text = diagnosis_markdown(data)
    assert "| `rank_any` | the fast path's ranking loss" in text and "+2.00 [+1.00, +3.00]" in text
    assert "Chosen: `paper`" in text and "none was run on test" in text and "commit(s) `abc1234`" in text
    pair = {"a": "rank_any", "b": "best_fixed_rule", "mean": 1.5, "low": 0.5, "high": 2.5}
    data |= {"chosen": "rank_any", "test": {"pairwise": [pair], "commit": "abc1234", "seconds": 30.0}}
    assert "| `rank_any` − Best fixed rule (chosen on dev) | +1.50 [+0.50, +2.50] |" in diagnosis_markdown(data)


def test_each_compared_row_is_placed_between_the_ladders_rule_and_its_ceiling():
    from benchmarks.pages.drift import placement_markdown

    ladder = {
        "rows": [
            {"rung": "none"},
            {"rung": "best_fixed_rule", "gain": _iv(2.0, 1.0, 3.0)},
            {"rung": "learnable_ceiling", "gain": _iv(12.0, 10.0, 14.0)},
        ]
    }
    summary = {
        "vs_none": [
            {"a": "steering_rl", "b": "no_supervision", **_iv(7.0, 5.0, 9.0)},
            {"a": "oracle", "b": "no_supervision", **_iv(20.0, 18.0, 22.0)},
        ]
    }
    text = placement_markdown(ladder, summary)
    assert "| +7.0 [+5.0, +9.0] | +0.50 |" in text and "+20.0" not in text
    assert placement_markdown({"rows": [{"rung": "none"}]}, summary) == ""


def test_the_committed_page_is_its_render_and_shows_the_hand_written_rung(tmp_path):
    """``docs/results_drift.md`` is what ``steer-envs report results_drift`` makes of the committed summaries, and
    every level shows the hand-written rung with its place on the ladder's scale."""
    from steer_envs.paths import REPO_ROOT

    rebuilt = get_page("results_drift").build(REPO_ROOT / "docs" / "results" / "drift", tmp_path / "page.md")
    text = rebuilt.read_text(encoding="utf-8")
    assert text == (REPO_ROOT / "docs" / "results_drift.md").read_text(encoding="utf-8")
    summary = json.loads((REPO_ROOT / "docs" / "results" / "drift" / "hand_written" / "summary.json").read_text())
    for level, data in summary["levels"].items():
        assert f"### The hand-written rung on `{level}`" in text
        assert f"place on that scale is **{data['place']:.2f}**" in text
        assert data["rows"]["none"]["f1"] == pytest.approx(data["ladder"]["none_f1"], abs=0.01)  # replays the ladder
    components = json.loads((REPO_ROOT / "docs" / "results" / "drift" / "components" / "summary.json").read_text())
    assert f"### Where the paper's trainer loses the margin on `{components['executor']}` (its parts, on dev)" in text
    fast = components["fast_path_auc"]["trained"]
    assert f"with a drift under way from the others with ROC AUC {fast:.3f} trained" in text


def test_the_hand_written_rung_is_placed_with_the_compared_rows():
    from benchmarks.pages.drift import placement_markdown

    ladder = {
        "rows": [{"rung": "best_fixed_rule", "gain": _iv(2, 1, 3)}, {"rung": "learnable_ceiling", "gain": _iv(6, 5, 7)}]
    }
    summary = {"vs_none": []}
    hand = {"gains": {"hand_written - none": _iv(8, 7, 9)}}
    text = placement_markdown(ladder, summary, hand)
    assert "| hand-written rule (the card's tells, on the ladder's tasks) | +8.0 [+7.0, +9.0] | +1.50 |" in text
    assert "hand-written" not in placement_markdown(ladder, summary)


def test_the_supervised_bound_recomputes_from_its_committed_episodes_and_is_on_the_page():
    """Every row and paired interval of ``docs/results/drift/supervised`` from its episodes alone, by the study's own
    measurement; its no-supervision and fixed-rule rows replay the ladder's; the page shows each fit's place."""
    from studies.drift_supervised.run import RESULTS, ROWS, measure

    summary = json.loads((RESULTS / "summary.json").read_text())
    rows = _stored_rows(RESULTS, ROWS)
    again = measure(rows, summary["config"]["benchmarks"])
    assert again["rows"] == summary["rows"] and again["gains"] == summary["gains"]
    hand = json.loads((RESULTS.parent / "hand_written" / "summary.json").read_text())["levels"]["sim:drift1"]["rows"]
    for row in ("none", "best_fixed_rule", "hand_written"):
        assert summary["rows"][row]["f1"] == hand[row]["f1"]  # the same tasks, seeds and rules as the rung's study
    assert summary["train_decisions"] == summary["ladder_train_decisions"]  # the ladder's protocol, the ladder's data
    text = (RESULTS.parents[2] / "results_drift.md").read_text(encoding="utf-8")
    assert "### The supervised bound on `sim:drift1`" in text
    for fit, place in summary["place"].items():
        assert place == pytest.approx(
            summary["gains"][f"{fit} - best_fixed_rule"]["mean"] / summary["ceiling_over_rule"], abs=1e-3
        )
        assert f"| {place:+.2f} |" in text


def test_the_frozen_ngram_trainer_recomputes_from_its_committed_episodes_and_follows_its_dev_rule():
    """Every row and paired interval of ``docs/results/drift/rl_ngrams`` from its episodes alone, the dev choice by the
    rule it states, and the page's places."""
    from studies.drift_rl_ngrams.run import RESULTS, TRAINERS, measure

    summary = json.loads((RESULTS / "summary.json").read_text())
    rows = _stored_rows(RESULTS, ("none", "best_fixed_rule", "hand_written", *TRAINERS))
    again = measure(rows, summary["config"]["benchmarks"])
    assert again["rows"] == summary["rows"] and again["gains"] == summary["gains"]
    assert all(summary["rows"][row]["runs"] == 3 for row in TRAINERS)
    choice = summary["choice"]
    assert choice["chosen"] == ("rl_frozen_ngrams" if choice["dev_gain"]["low"] > 0 else "rl_paper")
    text = (RESULTS.parents[2] / "results_drift.md").read_text(encoding="utf-8")
    assert "### The paper's trainer with the n-gram table frozen, on `sim:drift1`" in text
    for row, place in summary["place"].items():
        assert f"| {place:+.2f} |" in text, row


def _stored_rows(results, names):
    """A study's committed test episodes (``results/episodes.jsonl.gz``: a ``row`` and a ``run`` per line) as the
    harness's rows, one run per training seed."""
    from benchmarks.harness.results_summary import EPISODES_FILE, read_episodes
    from benchmarks.harness.stats import RowRuns
    from benchmarks.harness.summary_rows import stored_record

    lines = read_episodes(results / EPISODES_FILE)
    rows = {}
    for row in names:
        runs: dict[str, list] = {}
        for x in (x for x in lines if x["row"] == row):
            runs.setdefault(x["run"], []).append(stored_record(x, method=x["run"]))
        rows[row] = RowRuns(row, runs)
    return rows
