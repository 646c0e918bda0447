"""studies/reader_auc: the study's command at its quick size trains a reader, chooses it on dev and scores a held-out
split it was not chosen on, well above chance."""

from __future__ import annotations

import re

from studies.reader_auc.run import QUICK, main


def test_quick_run_trains_a_reader_and_scores_both_splits(capsys):
    assert main(["--quick", "--split", "test", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"chose {QUICK['classifiers'][0]}" in out  # trained here (--no-cache), not read back
    line = r"^(?P<split>dev|test): ROC AUC (?P<auc>[\d.]+) over \d+ pairs \(\d+ hold a gold answer\) of (?P<tasks>\d+)"
    scores = {m["split"]: (float(m["auc"]), int(m["tasks"])) for m in re.finditer(line, out, re.MULTILINE)}
    assert set(scores) == {"dev", "test"}
    for split, (auc, tasks) in scores.items():
        assert 0.6 < auc <= 1.0, (split, auc)  # the lexical reader ranks answer-bearing passages well above chance
        assert 0 < tasks <= QUICK["eval_tasks"]
    by_benchmark = re.findall(r"^  by benchmark: (.*)$", out, re.MULTILINE)
    assert by_benchmark and all(
        set(re.findall(r"([a-z0-9]+) [\d.]+", line)) <= set(QUICK["benchmarks"]) for line in by_benchmark
    )
