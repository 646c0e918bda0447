"""ACTGUIDE-RL's trainer on the real env (small budgets): budget accounting, hard groups and guidance, variants,
checkpoints loaded with weights_only=True and exact resume, fork probes vs restarts, SFT, evaluation, barrier, CLI."""

from __future__ import annotations

import json

import pytest
import torch

from agents.actguide.barrier import barrier_table, diagnose
from agents.actguide.config import VARIANTS
from agents.actguide.evaluate import evaluate, pass_at_k, success_rate
from agents.actguide.learners import build_learner
from agents.actguide.rollout import reset_task, run_group
from agents.actguide.search import ForkProbes, RestartProbes
from agents.actguide.sft import demonstrations, supervised_finetune
from agents.actguide.tasks import make_env, sample_tasks, training_pool
from agents.actguide.trainer import CHECKPOINT_FILE, LOG_FILE, ActGuideTrainer, load_learner
from steer_envs.errors import SteerEnvsError
from tests.agents.support import small_actguide


def test_training_accounts_every_rollout_and_guides_hard_groups(tmp_path):
    result = ActGuideTrainer(small_actguide(), tmp_path / "run").run()
    log = result.log
    assert result.budget_used >= 120 and result.budget_used == sum(r["rollouts"] for r in log)
    for row in log:
        unguided = 3 * 4
        guided = 4 * row["guided_groups"]
        assert row["rollouts"] == unguided + guided + row["probe_rollouts"]
        assert row["guided_groups"] <= row["hard_groups"]
    assert sum(r["hard_groups"] for r in log) > 0  # the uniform initial policy fails most groups: a barrier
    assert sum(r["guided_groups"] for r in log) > 0 and sum(r["probe_rollouts"] for r in log) > 0
    assert any(r["tokens"] > 0 for r in log)
    weights = torch.load(tmp_path / "run" / CHECKPOINT_FILE, weights_only=True)
    assert set(weights) == {"learner", "optimizer", "generator"}
    learner, meta = load_learner(tmp_path / "run")
    assert meta["budget_used"] == result.budget_used


def test_zero_rl_never_guides_and_variants_differ(tmp_path):
    log = ActGuideTrainer(small_actguide(budget=40).variant("zero_rl"), tmp_path / "z").run().log
    assert all(r["guided_groups"] == 0 and r["probe_rollouts"] == 0 for r in log)
    assert all(r["rollouts"] == 12 for r in log)
    log = ActGuideTrainer(small_actguide(budget=60).variant("no_adaptive"), tmp_path / "na").run().log
    assert all(r["probe_rollouts"] == 0 for r in log) and sum(r["guided_groups"] for r in log) > 0
    assert set(VARIANTS) >= {
        "actguide",
        "zero_rl",
        "sft_rl",
        "fixed_k",
        "no_adaptive",
        "no_fallback",
        "no_mixed",
        "noise_10",
        "noise_20",
    }


def test_guidance_until_stops_guiding_once_its_share_of_the_budget_is_spent(tmp_path):
    """Past ``guidance_until`` of the budget no group is guided or probed (hard groups stay unguided), before it hard
    groups are; the run with the whole budget guided guides in its second half too (the switch is what stops it)."""
    log = ActGuideTrainer(small_actguide(budget=160, guidance_until=0.5), tmp_path / "half").run().log
    before = [r for r in log if r["guidance_on"]]
    after = [r for r in log if not r["guidance_on"]]
    assert before and after and log.index(after[0]) == len(before)  # one switch, from on to off
    assert all(r["budget_used"] - r["rollouts"] >= 80 for r in after)  # off once half the budget is spent
    assert all(r["budget_used"] - r["rollouts"] < 80 for r in before)  # and not before
    assert sum(r["guided_groups"] for r in before) > 0
    assert all(r["guided_groups"] == 0 and r["probe_rollouts"] == 0 and r["rollouts"] == 12 for r in after)
    assert sum(r["hard_groups"] for r in after) > 0  # hard groups there were, and they stayed unguided
    full = ActGuideTrainer(small_actguide(budget=160), tmp_path / "full").run().log
    assert all(r["guidance_on"] for r in full)
    assert sum(r["guided_groups"] for r in full if r["budget_used"] - r["rollouts"] >= 80) > 0
    with pytest.raises(SteerEnvsError, match="guidance_until must be in"):
        small_actguide(guidance_until=0.0)


def test_revisit_rescued_draws_a_rescued_task_again_in_the_next_iteration(tmp_path):
    """Each iteration after a rescued guided group starts with that many revisits (the rescued tasks, in place of new
    ones: the batch and the budget accounting stay as they were); without the option nothing is revisited."""
    log = ActGuideTrainer(small_actguide(budget=200, revisit_rescued=True), tmp_path / "revisit").run().log
    assert sum(r["rescued_groups"] for r in log[:-1]) > 0
    for before, after in zip(log, log[1:]):
        assert after["revisited"] == min(before["rescued_groups"], 3)
        assert after["tasks"][: after["revisited"]] == before["rescued_tasks"][:3]  # those tasks, first in the batch
    fresh = [t for r in log for t in r["tasks"][r["revisited"] :]]
    pool = [t for r in ActGuideTrainer(small_actguide(budget=200), tmp_path / "order").run().log for t in r["tasks"]]
    assert fresh == pool[: len(fresh)]  # the new tasks continue the pool's order: none skipped by a revisit
    assert all(r["rollouts"] == 12 + 4 * r["guided_groups"] + r["probe_rollouts"] for r in log)
    plain = ActGuideTrainer(small_actguide(budget=200), tmp_path / "plain").run().log
    assert all(r["revisited"] == 0 for r in plain)
    assert [r["rescued_groups"] for r in plain] != [r["rescued_groups"] for r in log]


@pytest.mark.parametrize("switches", [{}, {"revisit_rescued": True, "guidance_until": 0.5}], ids=["plain", "revisit"])
def test_resume_continues_exactly(tmp_path, switches):
    """Stopped after its first iteration (with revisits: after the first that rescued a group, so the tasks to revisit
    are in the checkpoint), a run resumed from its checkpoint ends exactly as the run that never stopped."""
    config = small_actguide(budget=80, **switches)
    full = ActGuideTrainer(config, tmp_path / "full").run()

    class Stop(Exception):
        pass

    def stop_after_first(i, record):
        if (record["rescued_groups"] > 0) if switches else i == 0:
            raise Stop

    with pytest.raises(Stop):
        ActGuideTrainer(config, tmp_path / "cut", on_iteration_end=stop_after_first).run()
    with pytest.raises(SteerEnvsError, match="--resume"):
        ActGuideTrainer(config, tmp_path / "cut").run()
    resumed = ActGuideTrainer(config, tmp_path / "cut", resume=True).run()
    strip = lambda log: [{k: v for k, v in r.items() if not k.endswith("_s")} for r in log]  # noqa: E731
    assert strip(resumed.log) == strip(full.log)
    a, _ = load_learner(tmp_path / "full")
    b, _ = load_learner(tmp_path / "cut")
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    with pytest.raises(SteerEnvsError, match="different actguide config"):
        ActGuideTrainer(small_actguide(budget=81, **switches), tmp_path / "full", resume=True).run()


def test_probes_by_fork_reach_the_same_states_with_fewer_env_steps():
    config = small_actguide(plan_mode="prefix")
    env = make_env(config)
    learner = build_learner("admissible", {})
    task = "musique/2hop__574419_270105"
    fork = ForkProbes(env, learner, task, 5, 2, torch.Generator().manual_seed(0), "prefix")
    restart = RestartProbes(make_env(config), learner, task, 5, 2, torch.Generator().manual_seed(0), "prefix")
    for k in (1, 2, 3):
        state_fork, _ = fork.start_state(k)
        state_restart, spent = restart.start_state(k)
        assert state_fork["episode"].transcript == state_restart["episode"].transcript
        assert state_fork["episode"].shuffle_seed == state_restart["episode"].shuffle_seed
    for k in (2, 1, 2, 3):
        fork.probe(k)
        restart.probe(k)
    assert fork.cost.rollouts == restart.cost.rollouts == 8
    # restarting pays the prefix searches on every probe; forking paid them once
    assert fork.cost.env_steps < restart.cost.env_steps
    assert fork.cost.restart_env_steps - fork.cost.env_steps >= 2 * (2 + 1 + 2 + 2) - 2


def test_prefix_mode_training_uses_fork_probes(tmp_path):
    log = ActGuideTrainer(small_actguide(plan_mode="prefix", budget=80), tmp_path / "p").run().log
    spent = sum(r["probe_env_steps"] for r in log)
    restart = sum(r["probe_restart_env_steps"] for r in log)
    assert sum(r["probe_rollouts"] for r in log) > 0 and spent < restart


def test_sft_imitates_the_action_data():
    config = small_actguide(sft_epochs=40)
    env = make_env(config)
    learner = build_learner("admissible", {})
    pool = training_pool(env, config)
    views, actions, steps = demonstrations(env, learner, pool, 0)
    assert len(views) == steps > len(pool)
    before = torch.cat(learner.token_logprobs(views, actions)).mean().item()
    info = supervised_finetune(learner, env, pool, config)
    after = torch.cat(learner.token_logprobs(views, actions)).mean().item()
    assert info["demonstrations"] == len(views) and after > before + 0.3


def test_evaluation_is_unguided_and_paired_by_seed():
    config = small_actguide()
    env = make_env(config, split="dev")
    ids = sample_tasks(env, 3, 0)
    learner = build_learner("admissible", {})
    a = evaluate(learner, env, ids, 4, "a", seed_offset=100)
    b = evaluate(learner, env, ids, 4, "a", seed_offset=100)
    assert a == b and len(a) == 4 * len(ids)
    assert {e.seed for e in a} == {100, 101, 102, 103}
    assert set(pass_at_k(a)) == set(ids) and all(0 <= v <= 1 for v in success_rate(a).values())
    reset_task(env, ids[0], 0, 0)
    assert all(not s.guided for t in run_group(env, learner, 2, torch.Generator()) for s in t.steps)


def test_barrier_diagnostics_small(tmp_path):
    config = small_actguide()
    env = make_env(config, split="dev")
    ids = sample_tasks(env, 2, 0)
    report = diagnose(build_learner("admissible", {}), env, ids, "initial", K=2, max_k=3, horizon=2)
    assert set(report.prefix_pass) == {0, 1, 2, 3} and len(report.M) == 3 and len(report.kappa) == 2
    assert all(0 <= v <= 1 for v in report.prefix_pass.values())
    assert report.B[0] == 0.0 and set(report.delta_logit) <= {1, 2, 3}
    assert report.fork_env_steps < report.restart_env_steps
    assert "Pass@K prefix k=3" in barrier_table([report])


def test_cli_train_and_barrier(tmp_path, capsys):
    from steer_envs.cli.main import main

    cfg = tmp_path / "cfg.json"
    cfg.write_text(
        json.dumps(
            {
                "benchmarks": ["musique"],
                "tasks_per_benchmark": 3,
                "budget": 30,
                "batch_tasks": 2,
                "group_size": 3,
                "max_turns": 3,
            }
        )
    )
    out = tmp_path / "run"
    assert (
        main(["train", "actguide", "--config", str(cfg), "--variant", "zero_rl", "--out", str(out), "--no-progress"])
        == 0
    )
    assert "rollouts" in capsys.readouterr().out and (out / LOG_FILE).is_file()
    saved = json.loads((out / "config.json").read_text())["config"]
    assert saved["guidance"] is False and saved["budget"] == 30
    assert main(["train", "actguide", "--out", str(tmp_path / "none"), "--resume", "--no-progress"]) == 2
    assert main(["train", "actguide", "--config", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "x")]) == 2
    bar = tmp_path / "bar"
    assert (
        main(
            [
                "barrier",
                "--model",
                "initial",
                str(out),
                "--out",
                str(bar),
                "--tasks-per-benchmark",
                "1",
                "--K",
                "2",
                "--max-k",
                "1",
                "--horizon",
                "1",
            ]
        )
        == 0
    )
    assert (bar / "barrier.png").stat().st_size > 1000
    rows = json.loads((bar / "barrier.json").read_text())
    assert [r["label"] for r in rows] == ["initial", "run"]
