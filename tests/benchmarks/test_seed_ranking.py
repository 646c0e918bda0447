"""The ranking per training seed: each learned row's i-th run against every fixed row's one run, by the
benchmark-macro F1 the tables use; own-rate rows and the oracle are not ranked."""

from __future__ import annotations

from benchmarks.harness.seed_ranking import macro_f1, ranking_markdown, seed_rankings


def _episodes(label: str, f1_by_benchmark: dict[str, list[float]]) -> list[dict]:
    return [
        {"label": label, "benchmark": b, "task_id": f"{b}/{i}", "seed": 0, "f1": f1, "failed": False}
        for b, values in f1_by_benchmark.items()
        for i, f1 in enumerate(values)
    ]


def test_macro_f1_weighs_benchmarks_equally_and_averages_seeds_per_task_first():
    episodes = _episodes("x", {"nq": [1.0, 1.0, 1.0, 0.0], "musique": [0.0]})
    assert macro_f1(episodes, ["nq", "musique"]) == 100 * (0.75 + 0.0) / 2
    repeated = episodes + [dict(episodes[0], seed=1, f1=0.0)]  # task nq/0 now averages 0.5 over its two seeds
    assert macro_f1(repeated, ["nq", "musique"]) == 100 * ((0.5 + 1 + 1 + 0) / 4) / 2


def test_each_training_seed_is_ranked_and_the_focus_rows_place_is_reported():
    rows = {
        "no_supervision": {"labels": ["none"]},
        "steering_rl": {"labels": ["rl0", "rl1"]},
        "sb3_ppo": {"labels": ["ppo0", "ppo1"]},
        "planning_rl": {"labels": ["plan0", "plan1"]},
        "oracle": {"labels": ["oracle"]},
    }
    summary = {"rows": rows, "benchmarks": ["nq"], "plan": {"own_rate_rows": ["planning_rl"]}}
    f1 = {"none": 0.2, "rl0": 0.6, "rl1": 0.3, "ppo0": 0.5, "ppo1": 0.4, "plan0": 0.9, "plan1": 0.9, "oracle": 1.0}
    episodes = [e for label, v in f1.items() for e in _episodes(label, {"nq": [v]})]
    first, second = seed_rankings(summary, episodes)
    assert [name for name, _ in first.order] == ["steering_rl", "sb3_ppo", "no_supervision"]
    assert [name for name, _ in second.order] == ["sb3_ppo", "steering_rl", "no_supervision"]
    text = ranking_markdown([first, second], "steering_rl")
    assert "ranks 1, 2 of 3 with training seeds 0, 1; the first row changes with the seed" in text
