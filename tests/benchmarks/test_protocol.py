"""The evaluation protocol: intervals over tasks *and* training seeds, the macro average, knobs chosen on dev only,
measured budgets, provenance (split and commit) in every run folder, the setting card, the self-explaining table."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines.registry import parse_method
from benchmarks.harness.budget import BUDGET_FILE, Budget, build_measured, format_steps
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.operating import CHOICES_FILE, choose_rate, interventions_per_task
from benchmarks.harness.provenance import RUNS_FILE, code_version, read_runs
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate, method_context
from benchmarks.harness.setting import setting_card
from benchmarks.harness.stats import HierarchicalBootstrap, Interval, RowRuns, paired_gain, summarize_rows
from benchmarks.harness.tables import closing_line, comparison_table, pairwise_table
from steer_envs.episodes import EpisodeRecord
from steer_envs.errors import SteerEnvsError
from steer_envs.meter import env_steps


def _rec(method, task, seed, f1, bench="nq", interventions=0):
    return EpisodeRecord(
        method=method,
        task_id=task,
        benchmark=bench,
        seed=seed,
        f1=f1,
        em=float(f1 == 1.0),
        reward=f1,
        interventions=interventions,
        executor_turns=3,
        decisions=3,
    )


def _runs(name, values_by_seed, benches):
    """A row: one run per training seed; ``values_by_seed[s][i]`` is task i's F1 (2 evaluation seeds, equal)."""
    return RowRuns(
        name,
        {
            f"{name}:seed={s}": [_rec(name, f"t{i}", e, v, benches[i]) for i, v in enumerate(values) for e in range(2)]
            for s, values in enumerate(values_by_seed)
        },
    )


def test_one_training_seed_reduces_to_the_stratified_task_bootstrap():
    rng = np.random.default_rng(1)
    benches = ["nq" if i % 3 else "musique" for i in range(60)]
    base = [float(v) for v in rng.uniform(size=60)]
    method = [min(1.0, v + 0.05) for v in base]
    rows = [_runs("m", [method], benches), _runs("none", [base], benches)]
    boot = HierarchicalBootstrap(rows, ["nq", "musique"])
    _, gain = boot.gain("m", "none")
    _, reference = paired_gain(rows[0].records(), rows[1].records(), ["nq", "musique"])
    assert gain == reference


def test_training_seed_variance_widens_the_interval_and_the_point_is_the_seed_mean():
    rng = np.random.default_rng(2)
    benches = ["nq"] * 40 + ["musique"] * 40
    base = [float(v) for v in rng.uniform(0.2, 0.6, size=80)]
    agreeing = [[v + 0.1 for v in base]] * 3  # three training runs that agree
    spread = [[v + d for v in base] for d in (-0.05, 0.1, 0.25)]  # same mean gain, runs that disagree
    rows = [_runs("agree", agreeing, benches), _runs("spread", spread, benches), _runs("none", [base], benches)]
    boot = HierarchicalBootstrap(rows, ["nq", "musique"])
    _, tight = boot.gain("agree", "none")
    _, wide = boot.gain("spread", "none")
    assert tight.mean == pytest.approx(10.0) and wide.mean == pytest.approx(10.0)
    assert (wide.high - wide.low) > 5 * (tight.high - tight.low)
    assert wide.low < 2.0 < 18.0 < wide.high  # training-seed spread is in the interval
    summary = summarize_rows(rows, ["nq", "musique"], reference="none", boot=boot)
    assert [s.n_train_seeds for s in summary] == [3, 3, 1] and summary[1].labels[0] == "spread:seed=0"


def test_the_average_is_the_macro_mean_over_benchmarks():
    benches = ["nq"] * 9 + ["bamboogle"]
    values = [0.5] * 9 + [1.0]
    (summary,) = summarize_rows([_runs("m", [values], benches)], ["nq", "bamboogle"], reference=None)
    assert summary.avg_f1 == pytest.approx(75.0)  # (50 + 100) / 2, not the pooled 55


def test_rows_must_share_tasks_and_seeds():
    a = RowRuns("a", {"a": [_rec("a", "t1", 0, 1.0)]})
    b = RowRuns("b", {"b": [_rec("b", "t2", 0, 1.0)]})
    with pytest.raises(SteerEnvsError, match="different"):
        HierarchicalBootstrap([a, b], ["nq"])


def test_the_table_marks_the_best_row_and_the_closing_line_names_the_winner():
    benches = ["nq", "musique"] * 10
    rows = [
        _runs("no_supervision", [[0.4] * 20], benches),
        _runs("best_fixed_rule", [[0.5] * 20], benches),
        _runs("steering_rl", [[0.55] * 20, [0.6] * 20, [0.65] * 20], benches),
    ]
    boot = HierarchicalBootstrap(rows, ["nq", "musique"])
    summaries = summarize_rows(rows, ["nq", "musique"], boot=boot)
    table = comparison_table(summaries, ["nq", "musique"], {"steering_rl": "1.2M"}, {"steering_rl": "tau=0.1"})
    best = [line for line in table.splitlines() if "★" in line]
    assert len(best) == 1 and "RL steering" in best[0] and "| 3 | 1.2M | tau=0.1 |" in best[0]
    pairs = {("steering_rl", "best_fixed_rule"): boot.gain("steering_rl", "best_fixed_rule")[1]}
    line = closing_line(summaries, "steering_rl", "best_fixed_rule", pairs)
    assert line.startswith("**Verdict:** RL steering") and "beats Best fixed rule (chosen on dev) (+10.00" in line
    loses = closing_line(
        summaries, "best_fixed_rule", "steering_rl", {("best_fixed_rule", "steering_rl"): Interval(-10.0, -15.0, -5.0)}
    )
    assert "does not" in loses and "loses to" in loses
    off_rate = closing_line(summaries, "steering_rl", "best_fixed_rule", pairs, not_best=frozenset({"steering_rl"}))
    assert (
        "No verdict against Best fixed rule (chosen on dev): RL steering (the paper's trainer) not matched" in off_rate
    )
    assert "beats" not in off_rate
    assert "B better" in pairwise_table([("best_fixed_rule", "steering_rl", Interval(-10.0, -15.0, -5.0))])
    assert format_steps(1_234_567) == "1.23M" and format_steps(45_600) == "46k" and format_steps(None) == "–"


def _dev(tmp_path, name="dev", split="dev"):
    return RunFolder(tmp_path / name, EvalConfig(benchmarks=("nq", "hotpotqa"), split=split, seeds=1, limit=4))


def test_rate_knob_is_chosen_on_dev_by_bisection_and_cached(tmp_path):
    dev = _dev(tmp_path)
    choice = choose_rate(dev, "random", target=1.0, tolerance=0.15, max_probes=6, log=lambda _: None)
    assert choice.knob == "p" and choice.split == "dev" and choice.label == f"random:p={choice.value}"
    rates = [p["rate"] for p in choice.probes]
    assert choice.dev_rate == min(rates, key=lambda r: abs(r - 1.0))
    assert interventions_per_task(dev, choice.label) == choice.dev_rate
    assert json.loads((dev.root / CHOICES_FILE).read_text())["random"]["value"] == choice.value
    runs = len(read_runs(dev.root))
    again = choose_rate(dev, "random", target=1.0, tolerance=0.15, max_probes=6, log=lambda _: None)
    assert again == choice and len(read_runs(dev.root)) == runs  # read back, nothing re-run


def test_a_knob_is_never_chosen_on_test(tmp_path):
    with pytest.raises(SteerEnvsError, match="chosen on the dev split"):
        choose_rate(_dev(tmp_path, "test", split="test"), "random")


def test_every_evaluation_records_its_split_and_commit(tmp_path):
    folder = _dev(tmp_path)
    evaluate(folder, "no_supervision", progress=False, log=lambda _: None)
    (entry,) = read_runs(folder.root)
    assert (entry.label, entry.split, entry.episodes) == ("no_supervision", "dev", 8)
    assert entry.commit == code_version() and entry.commit != ""
    evaluate(folder, "no_supervision", progress=False, log=lambda _: None)  # nothing ran: nothing recorded
    assert len((folder.root / RUNS_FILE).read_text().splitlines()) == 1
    card = setting_card(folder, train_seeds=3).markdown()
    for part in (
        "corpus `passages.jsonl.gz` sha256",
        "retriever bm25s, k=3",
        "executor `sim:default` (hash",
        "split **dev**",
        "8 tasks (nq 4, hotpotqa 4)",
        "1 evaluation seed(s) per task x 3 training seeds",
        f"commit `{entry.commit}`",
    ):
        assert part in card, part


def test_budget_is_the_measured_env_steps_of_training_and_a_reload_adds_none(tmp_path):
    folder = RunFolder(
        tmp_path / "run", EvalConfig(benchmarks=("nq",), split="dev", seeds=1, limit=1), checkpoints=tmp_path / "shared"
    )
    spec = parse_method("filtered_bc:N=2,tasks=3,epochs=5")
    context = method_context(folder, spec.label, progress=False, training_label=spec.training_label)
    before = env_steps()
    build_measured(spec, context)
    spent = env_steps() - before
    budget = Budget.read(context.workdir)
    assert context.workdir.parent == tmp_path / "shared" and (context.workdir / BUDGET_FILE).is_file()
    assert budget.env_steps == spent > 3  # three collection episodes plus paired continuations
    build_measured(spec, method_context(folder, spec.label, progress=False, training_label=spec.training_label))
    assert Budget.read(context.workdir).env_steps == spent and len(Budget.read(context.workdir).builds) == 1


_BUILD_IN_SHARED_CHECKPOINTS = """
import sys
from pathlib import Path
from baselines.registry import parse_method
from benchmarks.harness.budget import build_measured
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import method_context
from steer_envs.meter import env_steps
out, shared, limit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
folder = RunFolder(out, EvalConfig(benchmarks=("nq",), split="dev", seeds=1, limit=limit), checkpoints=shared)
spec = parse_method("filtered_bc:N=2,tasks=3,epochs=5")
before = env_steps()
build_measured(spec, method_context(folder, spec.label, progress=False, training_label=spec.training_label))
print("SPENT", env_steps() - before)
"""


def test_two_commands_sharing_checkpoints_train_a_method_once(tmp_path):
    """A table and its confirmation (other tasks, one checkpoints folder) started together: the build lock makes
    the second wait and load what the first trained, so one of them spends no env steps and the budget holds one
    build. Without the lock both train (two builds, both spending steps)."""
    import subprocess
    import sys

    shared = tmp_path / "shared"
    script = tmp_path / "build.py"
    script.write_text(_BUILD_IN_SHARED_CHECKPOINTS)
    children = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / f"run{i}"), str(shared), str(i + 1)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    spent = []
    for child in children:
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr[-2000:]
        spent.append(int(stdout.split("SPENT")[-1]))
    (workdir,) = [d for d in shared.iterdir() if d.is_dir()]
    budget = Budget.read(workdir)
    assert sorted(spent)[0] == 0 and sorted(spent)[1] == budget.env_steps > 3, spent
    assert len(budget.builds) == 1


def test_the_oracle_is_headroom_never_the_best_row_and_labels_read_with_their_options():
    from benchmarks.harness.tables import best_row, display_name

    benches = ["nq", "musique"] * 10
    rows = [
        _runs("no_supervision", [[0.4] * 20], benches),
        _runs("oracle", [[0.9] * 20], benches),
        _runs("steering_rl", [[0.5] * 20], benches),
    ]
    summaries = summarize_rows(rows, ["nq", "musique"])
    assert best_row(summaries).method == "steering_rl"
    table = comparison_table(summaries, ["nq", "musique"], {}, {})
    assert [line for line in table.splitlines() if "★" in line][0].startswith("| **★ RL steering")
    assert display_name("fixed_rule:at=1,option=verify") == "Fixed rule (at=1,option=verify)"
    assert display_name("steering_rl") == "RL steering (the paper's trainer)" and display_name("x:y=1") == "x:y=1"


def test_a_context_row_never_takes_the_star_or_the_verdict(tmp_path):
    """A context row runs as given (no knob on dev, one training seed): it is shown, never the comparison's winner,
    even with the highest F1; a context row that repeats a rate-matched row's name stays that row."""
    from benchmarks.harness.comparison import ComparisonPlan
    from benchmarks.harness.tables import best_row

    plan = ComparisonPlan(
        tmp_path,
        contenders=("no_supervision", "steering_rl"),
        context_rows=("fixed_rule:option=refocus,at=1", "no_supervision"),
    )
    benches = ["nq", "musique"] * 10
    rows = [
        _runs("no_supervision", [[0.4] * 20], benches),
        _runs("fixed_rule:at=1,option=refocus", [[0.9] * 20], benches),  # a row carries the method's label
        _runs("steering_rl", [[0.5] * 20], benches),
    ]
    summaries = summarize_rows(rows, ["nq", "musique"])
    assert best_row(summaries).method == "fixed_rule:at=1,option=refocus"  # without the plan's exclusions
    assert "fixed_rule:at=1,option=refocus" in plan.not_contenders()  # the label as rows carry it
    assert best_row(summaries, plan.not_contenders()).method == "steering_rl"
    assert "no_supervision" not in plan.not_contenders() and "oracle" in plan.not_contenders()
    table = comparison_table(summaries, ["nq", "musique"], {}, {}, not_best=plan.not_contenders())
    assert [line for line in table.splitlines() if "★" in line][0].startswith("| **★ RL steering")
    verdict = closing_line(summaries, "steering_rl", None, {}, not_best=plan.not_contenders())
    assert verdict.startswith("**Verdict:** RL steering")


def test_a_row_whose_dev_search_missed_the_rate_never_takes_the_star_or_the_verdict(tmp_path):
    """SB3 PPO with the highest F1, but its dev search ended at 1.63 interventions per task against a target of 1
    (tolerance 0.1): not matched, so the ★ and the verdict go to the best matched row, and a line names it."""
    from types import SimpleNamespace

    from benchmarks.harness.comparison import ComparisonPlan, Row, rate_matched, render_comparison
    from benchmarks.harness.operating import KnobChoice
    from benchmarks.harness.stats import Interval

    def choice(rate):
        return KnobChoice("sb3_ppo", "cost", "0.05", rate, 1.0, "sb3_ppo:cost=0.05")

    assert rate_matched([choice(1.08)], 1.0, 0.1) and not rate_matched([choice(1.08), choice(1.63)], 1.0, 0.1)
    assert Row("sb3_ppo", ["sb3_ppo:cost=0.05"]).matched  # a row without a rate knob is matched
    plan = ComparisonPlan(tmp_path)
    benches = ["nq", "musique"] * 10
    rows = [
        _runs("no_supervision", [[0.4] * 20], benches),
        _runs("sb3_ppo", [[0.9] * 20], benches),
        _runs("steering_rl", [[0.5] * 20], benches),
    ]
    summaries = summarize_rows(rows, ["nq", "musique"])
    pairs = {("steering_rl", "sb3_ppo"): Interval(-40.0, -41.0, -39.0)}
    card = SimpleNamespace(markdown=lambda: "card\n")  # the setting card is not what this test reads
    text = render_comparison(plan, ["nq", "musique"], summaries, pairs, {}, {}, card, {}, {}, None, ["sb3_ppo"])
    starred = [line for line in text.splitlines() if "★" in line and line.startswith("|")]
    assert len(starred) == 1 and "RL steering" in starred[0]
    assert "*Not matched: `sb3_ppo`" in text
    assert "**Verdict:** RL steering" in text
    unmatched_free = render_comparison(plan, ["nq", "musique"], summaries, pairs, {}, {}, card, {}, {}, None)
    assert [line for line in unmatched_free.splitlines() if "★" in line and line.startswith("|")][0].startswith(
        "| **★ SB3 PPO"
    )
