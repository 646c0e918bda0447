"""A service failure never enters a reward, a label or a decision: TRL's reward, ACTGUIDE-RL's
k-search probes, its barrier diagnostics and evaluation, the baselines' fork averages and the hand-off benchmarks.

Real parts: the loopback ``/retrieve`` server of ``test_failures_as_truncations`` over the real BM25 index, killed
before the run (every search then fails after its retries)."""

from __future__ import annotations

import math

import pytest
import torch

from agents.actguide.barrier import diagnose
from agents.actguide.config import ActGuideConfig
from agents.actguide.evaluate import evaluate, pass_at_k, success_rate
from agents.actguide.learners import build_learner
from agents.actguide.rollout import Trajectory
from agents.actguide.search import RestartProbes, minimal_k, probe_outcome
from agents.actguide.tasks import make_env
from agents.actguide.trainer import ActGuideTrainer
from steer_envs.episodes import EpisodeRecord
from tests.agents.support import small_actguide
from tests.integrations.test_failures_as_truncations import RetrievalServer, bm25  # noqa: F401 - the fixture

TASK = "musique/2hop__574419_270105"


def small(**kw) -> ActGuideConfig:
    """The shared small run at a budget of 24 rollouts in groups of two, one update epoch."""
    return small_actguide(**{"budget": 24, "group_size": 2, "update_epochs": 1, **kw})


@pytest.fixture()
def dead_spec(bm25):  # noqa: F811
    """A retriever spec whose server is already gone (every request fails after the retries)."""
    server = RetrievalServer(bm25)
    server.kill()
    return server.spec.replace("retries=1", "retries=0")


# -- TRL: a failed episode's reward is None, which GRPOTrainer leaves out of its advantages ------------------------
def test_trl_reward_of_a_failed_episode_is_none(dead_spec):
    from steer_envs.integrations.trl import GuidedSearchTools

    tools = GuidedSearchTools(split="dev", benchmarks=["hotpotqa"], retriever=dead_spec)
    tools.reset(seed=0, task_id=tools.unwrapped.tasks[0].id)
    tools.search("a query the dead server never answers")
    assert tools.done and tools.last_info["failure_source"] == "retrieval"
    assert tools.get_reward() is None


# -- ACTGUIDE-RL's k search -------------------------------------------------------------------------------------
def _traj(reward: float, failure: str | None = None) -> Trajectory:
    return Trajectory("t", "b", 0, "prompt", reward=reward, failure=failure)


def test_probe_outcome_ignores_failed_trajectories_and_is_none_when_all_failed():
    assert probe_outcome([_traj(0.0, "retrieval: down"), _traj(1.0)]) is True
    assert probe_outcome([_traj(0.0, "retrieval: down"), _traj(0.0)]) is False
    assert probe_outcome([_traj(0.0, "retrieval: down"), _traj(0.0, "retrieval: down")]) is None


def test_minimal_k_stops_as_unknown_on_a_probe_without_outcome():
    answers = {2: False, 3: None}
    result = minimal_k(answers.__getitem__, 4)
    assert result.unknown and not result.found and result.probes == [(2, False)]
    assert not minimal_k(lambda k: k >= 1, 4).unknown


def test_probes_on_a_dead_retriever_are_unknown_and_the_trainer_leaves_the_group_unguided(dead_spec, tmp_path):
    config = small()
    env = make_env(config, retriever=dead_spec)
    learner = build_learner("admissible", {})
    probes = RestartProbes(env, learner, TASK, 5, 2, torch.Generator().manual_seed(0), "prompt")
    assert probes.probe(1) is None and probes.cost.rollouts == 2
    trainer = ActGuideTrainer(config, tmp_path / "run")
    stats = {
        "probe_rollouts": 0,
        "probe_env_steps": 0,
        "probe_restart_env_steps": 0,
        "search_steps": [],
        "searches_found": 0,
        "searches_unknown": 0,
    }
    k, _ = trainer._choose_k(env, learner, TASK, 5, 3, torch.Generator().manual_seed(0), stats)
    assert k is None and stats["searches_unknown"] == 1 and stats["searches_found"] == 0


def test_barrier_leaves_out_measurements_whose_rollouts_all_failed(dead_spec):
    env = make_env(small(), split="dev", retriever=dead_spec)
    ids = [env.tasks[0].id]
    report = diagnose(build_learner("admissible", {}), env, ids, "initial", K=2, max_k=2, horizon=1)
    assert report.prefix_pass == {} and report.prompt_pass == {} and report.unknown > 0
    assert all(math.isnan(m) for m in report.M)


# -- ACTGUIDE-RL's evaluation ---------------------------------------------------------------------------------------
def test_evaluation_flags_failed_episodes_and_leaves_them_out(dead_spec):
    env = make_env(small(), split="dev", retriever=dead_spec)
    ids = [env.tasks[0].id]
    episodes = evaluate(build_learner("admissible", {}), env, ids, 2, "a")
    assert len(episodes) == 2 and all(e.failed for e in episodes)
    assert success_rate(episodes) == {} and pass_at_k(episodes) == {}
    mixed = [
        EpisodeRecord("a", "t", "b", 0, 0.0, 0.0, 0.0, failed=True),
        EpisodeRecord("a", "t", "b", 1, 1.0, 1.0, 1.0),
    ]
    assert success_rate(mixed) == {"t": 1.0} and pass_at_k(mixed) == {"t": True}


# -- baselines and benchmarks: a failed fork or episode is skipped, never averaged as F1 = 0 -------------------------
@pytest.fixture()
def dead_make(dead_spec, monkeypatch):
    """``gymnasium.make`` with every env's retriever behind the dead server (the env itself is real)."""
    import gymnasium

    real = gymnasium.make

    def make(env_id, **kwargs):
        return real(env_id, retriever=dead_spec, **kwargs)

    monkeypatch.setattr(gymnasium, "make", make)
    return make


def test_filtered_bc_and_oracle_skip_failed_forks(dead_make):
    from baselines.filtered_bc import _outcome, proposal_gain
    from baselines.oracle import Oracle

    env = dead_make(
        "steer_envs/SearchSteering-v0", split="dev", benchmarks=["hotpotqa"], max_turns=4, action_mode="discrete"
    )
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].id})
    base = env.unwrapped
    assert _outcome(base, 0, [1, 2]) is None  # before: 0.0, read as a real (bad) outcome
    assert proposal_gain(env, (base.get_state(), 1, [1, 2])) is None
    oracle = Oracle({"verify": 1}, 3, lookahead=2)
    oracle.bind(base)
    assert oracle._value(0, [1, 2]) is None


def test_handoff_calibration_drops_failed_runs(dead_make):
    from benchmarks.handoff_results import calibrate
    from benchmarks.harness.config import EvalConfig

    cal = calibrate(EvalConfig(benchmarks=("nq",), split="dev", seeds=1, limit=2, max_turns=30))
    assert cal["failed_episodes"] == 2 and cal["episodes"] == 0


def test_fixed_rule_scores_leave_failed_episodes_out_and_say_when_none_finished(dead_make, tmp_path):
    from baselines.fixed_rule import score_rules
    from baselines.registry import MethodContext
    from steer_envs.errors import SteerEnvsError

    context = MethodContext(benchmarks=("nq",), workdir=tmp_path, progress=False, max_turns=3)
    with pytest.raises(SteerEnvsError, match="every dev episode failed on a service"):  # before: F1 0 as a score
        score_rules(context, [("verify", 0)], tasks_per_benchmark=1, seeds=1)
