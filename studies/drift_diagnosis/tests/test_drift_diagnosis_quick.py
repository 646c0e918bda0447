"""studies/drift_diagnosis: on a tiny comparison of sim:drift2, every variant is trained, rate-matched and scored on
dev, the dev rule picks one, and only a variant other than the paper's is evaluated on test, paired with the
comparison's stored rows."""

from __future__ import annotations

import json

import pytest

from studies.drift_diagnosis.run import PAIRED_WITH, SUMMARY, VARIANTS, choose, main, variant_spec
from tests.benchmarks.support import ONLY_FAST_ROWS, TINY, results_doc_argv, summaries_of


def test_variants_change_one_thing_each():
    rl = "steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800"
    assert variant_spec(rl, "twice_rounds").endswith(",k=96,m=60")
    assert "config=studies/drift_diagnosis/rank_any.toml" in variant_spec(rl, "rank_any")
    assert variant_spec(rl, "paper") == rl


def test_the_dev_rule_takes_the_highest_dev_gain_and_the_paper_on_a_tie():
    def rec(gain: float) -> dict:
        return {"dev": {"avg_gain": {"mean": gain}}}

    assert choose({"paper": rec(1.0), "rank_any": rec(2.0), "twice_rounds": rec(0.5)}) == "rank_any"
    assert choose({"paper": rec(1.0), "rank_any": rec(1.0), "twice_rounds": rec(0.5)}) == "paper"


@pytest.mark.slow
def test_tiny_diagnosis_runs_every_variant_on_dev_and_tests_only_the_chosen_one(tmp_path):
    from benchmarks.harness.results_doc import main as results_main

    runs, doc = tmp_path / "runs", tmp_path / "results.md"
    argv = results_doc_argv(runs, doc, *ONLY_FAST_ROWS, train_seeds=2, max_probes=2, llm_limit=0)
    argv[argv.index("--profiles") + 1] = "sim:drift2"
    assert results_main(argv) == 0
    root = summaries_of(runs)
    out = tmp_path / "diag"
    assert main(["--variants", *VARIANTS, "--test", "--out", str(out), "--summaries", str(root)]) == 0
    data = json.loads((root / "diagnosis" / SUMMARY).read_text(encoding="utf-8"))
    assert set(data["variants"]) == set(VARIANTS) and data["chosen"] == choose(data["variants"])
    for variant, record in data["variants"].items():
        assert len(record["labels"]) == 2 and all("tau=" in label for label in record["labels"])
        assert record["spec"] == variant_spec(TINY, variant)
        assert record["dev"]["avg_gain"] is not None and "within" in record["spearman_dev"]
    if data["chosen"] == "paper":
        assert "test" not in data
    else:
        assert [p["b"] for p in data["test"]["pairwise"]] == list(PAIRED_WITH)
