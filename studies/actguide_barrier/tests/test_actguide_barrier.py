"""studies/actguide_barrier: the quick pipeline trains the base, zero RL and the method's candidates with the
skill_chain family, evaluates them on the family and the real benchmarks, chooses the method's arm from dev logs by
the pre-stated rule, runs the barrier diagnostics on the family, and a rerun skips what is done; the summary holds
the levels, gains, the dev choice and diagnostics with intervals, and the page renders from it."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.provenance import code_version
from benchmarks.harness.verdicts import NOT_SHOWN, REPRODUCES
from steer_envs.data.tasks import BENCHMARKS
from steer_envs.episodes import EpisodeRecord
from studies.actguide_barrier import confirm
from studies.actguide_barrier.confirm import main as confirm_main
from studies.actguide_barrier.page import render
from studies.actguide_barrier.run import ABLATIONS, DONE, FAMILY, SELECT, main
from studies.actguide_barrier.selection import CANDIDATES, IN_REGION_TOLERANCE, choose
from studies.actguide_barrier.summarize import EPISODES_FILE, PAIRS, _times, compare, passes, read_episodes, summarize


@pytest.mark.slow
def test_quick_pipeline_summary_and_page(tmp_path):
    out = tmp_path / "runs"
    stages = ["--stages", "barrier,compare,select"]
    assert main(["--quick", "--out", str(out), *stages, "--jobs", "1", "--quiet"]) == 0
    for run in ("base", "zero_rl/seed0", "actguide/seed0", "unguided_baseline/seed0"):
        assert (out / "runs" / run / "model.pt").is_file() and (out / "runs" / run / DONE).is_file()
    times = _times(out)
    assert times["training"] > 0 and times["evaluation"] > 0 and times["barrier"] > 0
    choice = json.loads((out / "choice.json").read_text())
    assert main(["--quick", "--out", str(out), *stages, "--quiet"]) == 0  # resumed: nothing to do
    assert _times(out) == times

    summary = summarize(out)
    # the levels and gains recomputed from the stored test episodes alone, as a reader of the committed files would
    stored = read_episodes(out / EPISODES_FILE)
    assert {group: compare(rows, group, PAIRS) for group, rows in stored.items()} == summary["groups"]
    assert summary["code"]["commits"] == [code_version()] and "agents/actguide/trainer.py" in summary["code"]["files"]
    assert summary["code"]["clean"] == (not code_version().endswith("+dirty"))
    family, real = summary["groups"]["family"], summary["groups"]["real"]
    assert family["levels"]["base"]["tasks"] == 3 and real["levels"]["base"]["tasks"] == 7
    for group in (family, real):
        for name in ("base", "zero_rl", "actguide"):
            mean, low, high = group["levels"][name]["success"]
            assert low <= mean <= high
        assert set(group["gains"]) >= {"zero_rl - base", "actguide - zero_rl"}
    assert set(summary["barrier"]) == {"base", "zero_rl", "actguide"}
    diag = summary["barrier"]["base"]
    assert set(diag["intervals"]["prefix"]) == set(range(5))
    assert set(summary["alignment"]) == {"base", "zero_rl.seed0", "actguide.seed0", "unguided_baseline.seed0"}
    # the choice was made from the dev logs alone: the rule applied to the summary's dev numbers gives the same arm
    assert summary["selection"] == choice and choice["chosen"] in CANDIDATES
    assert choose(summary["dev"]).to_dict() == choice
    dev = summary["dev"]
    assert dev["family"]["levels"]["zero_rl"]["tasks"] == 3 and dev["real"]["levels"]["zero_rl"]["tasks"] == 7
    assert (out / "eval" / "unguided_baseline.seed0.family.test.n2.jsonl").is_file()
    training = summary["training"]
    assert training["actguide"]["probe_rollouts"] > 0 and training["zero_rl"]["probe_rollouts"] == 0

    page = render(json.loads(json.dumps(summary)), "intro")
    assert "## 1. The barrier" in page and "## 2. ACTGUIDE-RL against zero RL" in page
    assert "### The method's arm: proposed from test results, picked on dev" in page and "**Chosen:" in page
    assert "steer-envs barrier --model RUNS/runs/base" in page
    # every stage's commands at the quick size (one seed): base, zero RL, its diagnostics, ACTGUIDE-RL, its
    # diagnostics, the other candidates, the ablations, the two runs at twice the budget
    assert len(summary["commands"]) == 1 + 1 + 1 + 1 + 1 + len(SELECT) + len(ABLATIONS) + 2

    # the confirmation on fresh seeds: every arm trained again from the same base, its verdict by the stated rule,
    # recomputed from the episodes it stores
    results = tmp_path / "results"
    assert confirm_main(["--out", str(out), "--results", str(results), "--quiet"]) == 0
    confirmation = json.loads((results / confirm.RESULT_FILE).read_text())
    for arm in confirm.ARMS:
        assert (out / "confirm" / "runs" / arm / "seed3" / DONE).is_file()
    assert confirmation["chosen"] == choice["chosen"] and confirmation["earlier_seeds"] == [0]
    assert confirmation["code"]["commits"] == [code_version()]
    stored = read_episodes(results / confirm.EPISODES_FILE)
    again = confirm.result(stored, confirmation["chosen"], [0])
    assert json.loads(json.dumps(again)) == {k: confirmation[k] for k in again}
    assert confirmation["confirmation"]["family"]["levels"]["zero_rl"]["seeds"] == len(confirm.CONFIRM_SEEDS)
    page = render(json.loads(json.dumps(summary)), "intro", confirmation)
    assert "## Answer" in page and "## 5. Confirmation on fresh training seeds" in page
    assert f"→ {confirmation['verdict']}" in page


def _dev(family: dict[str, float], real_gain: dict[str, float]) -> dict:
    return {
        "family": {"levels": {k: {"success": [v, v, v]} for k, v in family.items()}},
        "real": {"gains": {f"{k} - zero_rl": {"success": [v, v, v]} for k, v in real_gain.items()}},
    }


def test_dev_choice_follows_the_stated_rule():
    tol = IN_REGION_TOLERANCE
    # the in-region bound first: the better family arm loses too much in-region, so the other eligible one wins
    c = choose(
        _dev({"actguide": 1.0, "unguided_baseline": 5.0}, {"actguide": -tol + 0.1, "unguided_baseline": -tol - 0.1})
    )
    assert (c.chosen, c.bound_met) == ("actguide", True)
    assert [x.eligible for x in c.candidates] == [True, False]
    # both eligible: the higher family success; a tie goes to the paper's method
    assert (
        choose(_dev({"actguide": 1.0, "unguided_baseline": 5.0}, {"actguide": -1.0, "unguided_baseline": 0.0})).chosen
        == "unguided_baseline"
    )
    assert (
        choose(_dev({"actguide": 2.0, "unguided_baseline": 2.0}, {"actguide": 0.0, "unguided_baseline": 0.0})).chosen
        == "actguide"
    )
    # none eligible: the smallest in-region loss, and the choice says the bound was not met
    c = choose(_dev({"actguide": 0.0, "unguided_baseline": 5.0}, {"actguide": -6.0, "unguided_baseline": -4.0}))
    assert (c.chosen, c.bound_met) == ("unguided_baseline", False)
    # a candidate without dev numbers is an error, not a smaller choice
    with pytest.raises(KeyError):
        choose(_dev({"actguide": 1.0}, {"actguide": 0.0}))


def test_pass_at_k_rows_collapse_rollouts_per_task():
    from steer_envs.episodes import EpisodeRecord

    records = [
        EpisodeRecord("m", "a", "nq", 0, 0.0, 0.0, 0.0),
        EpisodeRecord("m", "a", "nq", 1, 1.0, 1.0, 1.0),
        EpisodeRecord("m", "b", "nq", 0, 0.0, 0.0, 0.0),
        EpisodeRecord("m", "b", "nq", 1, 0.0, 0.0, 0.0, failed=True),
    ]
    rows = {r.task_id: r.em for r in passes(records)}
    assert rows == {"a": 1.0, "b": 0.0}


def test_the_committed_levels_and_gains_recompute_from_the_committed_episodes():
    """Every level and paired gain the page and the README quote (``groups``), recomputed from the committed test
    episodes with the study's own comparison, equals the committed summary's."""
    from studies.actguide_barrier.summarize import RESULTS

    summary = json.loads((RESULTS / "summary.json").read_text(encoding="utf-8"))
    stored = read_episodes(RESULTS / summary["episodes"]["file"])
    assert set(stored) == set(summary["groups"]) == {"family", "real"}
    assert {group: compare(rows, group, PAIRS) for group, rows in stored.items()} == summary["groups"]


def test_the_committed_confirmation_recomputes_from_its_committed_episodes():
    """The fresh seeds' gains, the pooled gains and the verdict, recomputed from the committed episodes by the same
    functions, equal the committed confirmation."""
    from studies.actguide_barrier.summarize import RESULTS

    committed = json.loads((RESULTS / confirm.RESULT_FILE).read_text(encoding="utf-8"))
    stored = read_episodes(RESULTS / committed["episodes"]["file"])
    again = confirm.result(stored, committed["chosen"], committed["earlier_seeds"])
    assert json.loads(json.dumps(again)) == {key: committed[key] for key in again}


def _records(arm: str, seed: int, em: float) -> dict[str, list]:
    family = [EpisodeRecord(arm, f"{FAMILY}-{t}", FAMILY, r, em, em, em) for t in range(8) for r in range(2)]
    real = [EpisodeRecord(arm, f"{b}-0", b, 0, 0.5, 0.5, 0.5) for b in BENCHMARKS]
    return {"family": family, "real": real}


def test_the_confirmation_verdict_reads_the_fresh_seeds_alone():
    """The chosen arm confirms only on the confirmation seeds' interval: an arm that gains on the earlier seeds and
    not on the fresh ones is not confirmed, and the other way round."""
    wins_late = {"zero_rl": 0.0, "actguide": 0.0, "unguided_baseline": 1.0}
    groups: dict = {"family": {}, "real": {}}
    for arm in confirm.ARMS:
        for seed in (0, 1, 2, *confirm.CONFIRM_SEEDS):
            em = wins_late[arm] if seed in confirm.CONFIRM_SEEDS else float(arm == "actguide")
            for group, records in _records(arm, seed, em).items():
                groups[group].setdefault(arm, {})[f"{arm}.seed{seed}"] = records
    assert confirm.result(groups, "unguided_baseline", [0, 1, 2])["verdict"] == REPRODUCES
    late = confirm.result(groups, "actguide", [0, 1, 2])
    assert late["verdict"] == NOT_SHOWN
    assert late["all_seeds"]["family"]["gains"]["actguide - zero_rl"]["success"][0] == 50.0  # the earlier seeds' win


def test_the_committed_page_is_its_render_with_the_mechanism_section():
    """``docs/results_actguide_barrier.md`` is what ``python -m studies.actguide_barrier.page`` makes of the committed
    summaries, and section 6 shows every mechanism run the mechanism study committed."""
    from studies.actguide_barrier.page import INTRO, MECHANISM, PAGE, render
    from studies.actguide_barrier.summarize import RESULTS

    summary = json.loads((RESULTS / "summary.json").read_text(encoding="utf-8"))
    confirmation = json.loads((RESULTS / confirm.RESULT_FILE).read_text(encoding="utf-8"))
    mechanism = json.loads(MECHANISM.read_text(encoding="utf-8"))
    text = render(summary, INTRO.read_text(), confirmation, mechanism)
    assert text == PAGE.read_text(encoding="utf-8")
    assert "## 6. Inside the update: what the guided groups teach" in text and "*Inside the update*" in text
    for arm in mechanism["arms"].values():
        for run in arm["runs"].values():
            assert f"| {run['guided_family_groups']} | " in text
    assert all(check["same"] for check in mechanism["checked"].values())  # the barrier study's runs, retrained
