"""studies/handoff_credit: every hand-off of an unsupervised episode is forked and continued with its message let
through and rejected bare; each role's share of changed outcomes adds up, the quick command writes its report, and a
service failure ends a branch without an outcome instead of scoring it F1 = 0."""

from __future__ import annotations

import json
import socket

import pytest

from steer_envs.executors.pipeline import ROLES
from studies.handoff_credit.run import QUICK, credit, main, render


def test_credit_forks_every_handoff_and_reports_each_role():
    report = credit("dev", per_benchmark=1, seeds=2, benchmarks=["nq", "hotpotqa"], progress=False)
    assert set(report["roles"]) <= set(ROLES) and {"planner", "verifier", "summarizer"} <= set(report["roles"])
    for row in report["roles"].values():
        assert row["pairs"] == 2 * row["handoffs"]
        assert abs(row["raises"] + row["lowers"] - row["changes"]) < 1e-9
    assert "| verifier |" in render(report)


def test_quick_command_measures_the_landscape_and_writes_its_report(tmp_path, capsys):
    out = tmp_path / "credit"
    assert main(["--quick", "--options", "--out", str(out)]) == 0
    report = json.loads((out / "credit.json").read_text(encoding="utf-8"))
    assert report["tasks"] == QUICK["per_benchmark"] * len(QUICK["benchmarks"]) and report["seeds"] == QUICK["seeds"]
    assert report["landscape"] and all(0.0 <= v["helps"] + v["hurts"] <= 1.0 for v in report["landscape"].values())
    kinds = {key.split("|")[0] for key in report["landscape"]}
    assert "verifier->summarizer" in kinds or "verifier->planner" in kinds  # every hand-off kind of the episodes
    text = (out / "credit.md").read_text(encoding="utf-8")
    assert "Intervention landscape" in text and text in capsys.readouterr().out


@pytest.fixture()
def dead_retriever(monkeypatch):
    """Every env made in the test searches a retrieval server that is gone (a port nothing listens on)."""
    import gymnasium

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spec = f"http:http://127.0.0.1:{port}?timeout=2&retries=0&backoff=0.01"
    make = gymnasium.make
    monkeypatch.setattr(gymnasium, "make", lambda env_id, **kwargs: make(env_id, retriever=spec, **kwargs))
    return spec


def test_failed_branches_are_dropped_not_scored(dead_retriever):
    report = credit("dev", per_benchmark=1, seeds=2, benchmarks=["nq"], progress=False)
    assert report["roles"] and all(row["pairs"] == 0 for row in report["roles"].values())
    assert report["failed_pairs"] == 2 * sum(row["handoffs"] for row in report["roles"].values())
