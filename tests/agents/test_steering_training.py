"""End-to-end training rounds of the steering agent on the simulated executor (real data, real BM25)."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from agents.base import Policy
from agents.steering.agent import SteeringAgent
from agents.steering.checkpoint import load_checkpoint
from agents.steering.config import SteeringConfig
from agents.steering.encoder import EncoderSteerer
from agents.steering.interventions import argument_candidates, options_from_catalogue
from agents.steering.trainer import CHECKPOINT_FILE, LOG_FILE, SteeringTrainer, load_model
from steer_envs.envs.catalogue import STEERING
from steer_envs.errors import SteerEnvsError
from tests.timing import wait_until

TINY = dict(m=2, k=8, G=4, N=2, bank_tasks=16, benchmarks=["nq", "hotpotqa"], eps_sel=0.5)

OBS = {
    "goal": "Who directed the film Jaws?",
    "transcript": "<think> x </think>\n<search> jaws director </search>\n\n<information>Doc 1(Title: Jaws (film)) Jaws "
    "was directed by Steven Spielberg\nDoc 2(Title: Steven Spielberg) born 1946</information>\n\n",
    "turn": np.int64(1),
    "interventions": np.int64(0),
}


def test_argument_candidates_are_spans_of_the_observation():
    spans = argument_candidates(OBS)
    assert spans[:2] == ["Jaws (film)", "Steven Spielberg"]  # titles of the latest results, in rank order
    assert all(s in OBS["goal"] or s in OBS["transcript"] for s in spans[:-1])


def test_encoder_steerer_slow_path_gives_grounded_interventions_with_rationale():
    steerer = EncoderSteerer(options_from_catalogue(STEERING))
    samples = steerer.sample_slow(OBS, 16, torch.Generator().manual_seed(0))
    assert {s.option.name for s in samples} <= {e.name for e in STEERING[1:]}
    for s in samples:
        assert s.rationale and s.option.name in s.rationale
        if s.option.name == "search_new_title":
            assert s.argument in argument_candidates(OBS) and s.text == f"Search for: {s.argument}"
    lp = steerer.slow_logprobs(OBS, samples)
    assert lp.shape == (16,) and bool((lp < 0).all())


def test_steering_agent_is_a_policy_and_tau_moves_the_rate():
    steerer = EncoderSteerer(options_from_catalogue(STEERING))
    agent = SteeringAgent(steerer, tau=0.01, action_mode="text", deterministic=True)
    assert isinstance(agent, Policy)
    assert agent.act(OBS, {}) != "pass"  # tau tiny -> always intervene
    agent.tau = 0.99
    assert agent.act(OBS, {}) == "pass"
    agent.action_mode = "discrete"
    assert agent.act(OBS, {}) == 0


def _cfg(**kw):
    return SteeringConfig(**{**TINY, **kw})


@pytest.fixture(scope="module")
def one_round_run(tmp_path_factory):
    """One training round of the tiny config (``m=1``), shared by the tests that only read its run folder."""
    run = tmp_path_factory.mktemp("one_round") / "run"
    SteeringTrainer(_cfg(m=1), run).run()
    return run


def test_training_round_end_to_end_changes_only_steerer_and_logs(tmp_path):
    result = SteeringTrainer(_cfg(), tmp_path / "run").run()
    assert len(result.log) == 2
    rec = result.log[0]
    for key in ("loss", "loss_grpo", "loss_rank", "mean_q", "adv_mean", "adv_std", "intervention_rate", "rollouts"):
        assert key in rec
    assert rec["states"] == 8 and rec["rollouts"] > 0
    assert any(r["loss_grpo"] != 0 for r in result.log) and any(r["rank_pairs"] > 0 for r in result.log)
    steerer, payload = load_model(tmp_path / "run")
    fresh = EncoderSteerer(steerer.options, **payload["spec"])
    changed = [
        n for (n, a), (_, b) in zip(steerer.named_parameters(), fresh.named_parameters()) if not torch.equal(a, b)
    ]
    assert changed, "training must move the steerer's parameters"
    assert result.weights_changed is True and payload["extra"]["weights_changed"] is True
    assert all(r["grpo_groups"] >= 0 for r in result.log) and any(r["grpo_groups"] > 0 for r in result.log)
    lines = (tmp_path / "run" / LOG_FILE).read_text().splitlines()
    assert [json.loads(x)["round"] for x in lines] == [0, 1]


def test_a_run_that_changes_nothing_says_so_and_records_it(tmp_path, capsys):
    """One slow-path sample per state (G=1) makes every GRPO advantage zero, and one state (k=1) gives no ranking
    pairs: the weights end where they started. The trainer warns for the round and for the run, and records it (the
    log's grpo_groups, the model's weights_changed), instead of a steerer that looks trained."""
    result = SteeringTrainer(_cfg(m=1, k=1, G=1), tmp_path / "run").run()
    (row,) = result.log
    assert row["adv_zero_frac"] == 1.0 and row["grpo_groups"] == 0 and row["rank_pairs"] == 0
    assert result.weights_changed is False and load_model(tmp_path / "run")[1]["extra"]["weights_changed"] is False
    err = capsys.readouterr().err
    assert "round 0 changed nothing" in err and "weights equal its starting weights after 1 round" in err


def test_gradients_reach_fast_and_slow_heads(one_round_run):
    steerer, _ = load_model(one_round_run)
    # after one round, the heads of both paths have Adam state (they received gradients)
    ckpt = load_checkpoint(one_round_run / CHECKPOINT_FILE)
    names = [n for n, _ in steerer.named_parameters()]
    state = ckpt["optimizer"]["state"]
    got = {names[i] for i in state}
    assert {"option_head.weight", "encode.weight", "fast_head.weight", "bag.weight"} <= got


def test_reloaded_checkpoint_gives_identical_outputs(one_round_run):
    a, _ = load_model(one_round_run)
    b, _ = load_model(one_round_run)
    assert torch.equal(a.fast_scores([OBS]), b.fast_scores([OBS]))
    sa = a.sample_slow(OBS, 5, torch.Generator().manual_seed(3))
    sb = b.sample_slow(OBS, 5, torch.Generator().manual_seed(3))
    assert [s.text for s in sa] == [s.text for s in sb]
    assert torch.equal(a.slow_logprobs(OBS, sa), b.slow_logprobs(OBS, sb))


def test_resume_after_crash_keeps_bank_and_finished_rounds(tmp_path):
    run = tmp_path / "crash"
    full = SteeringTrainer(_cfg(m=3), tmp_path / "ref").run()

    def crash(round_index, record):
        if round_index == 1:
            raise RuntimeError("injected crash after the round-1 checkpoint")

    with pytest.raises(RuntimeError, match="injected"):
        SteeringTrainer(_cfg(m=3), run, on_round_end=crash).run()
    bank_before = load_checkpoint(run / CHECKPOINT_FILE)["bank"]
    assert load_checkpoint(run / CHECKPOINT_FILE)["next_round"] == 2
    with pytest.raises(SteerEnvsError, match="--resume"):
        SteeringTrainer(_cfg(m=3), run).run()
    resumed = SteeringTrainer(_cfg(m=3), run, resume=True).run()
    assert [r["round"] for r in resumed.log] == [0, 1, 2]
    ckpt = load_checkpoint(run / CHECKPOINT_FILE)
    assert [(s.task_id, s.turn) for s in ckpt["bank"]] == [(s.task_id, s.turn) for s in bank_before]
    # the interrupted run, resumed, is the same computation as the uninterrupted one
    for a, b in zip(resumed.log, full.log):
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-6) and a["mean_q"] == b["mean_q"]


def test_run_folder_refuses_a_different_config(tmp_path, one_round_run):
    shutil.copytree(one_round_run, tmp_path / "x")  # a copy: the shared run folder stays as trained
    with pytest.raises(SteerEnvsError, match="different config"):
        SteeringTrainer(_cfg(m=1, lr=0.1), tmp_path / "x", resume=True).run()


def test_config_file_errors_are_clear(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("m = 2\nbogus = 1\n")
    with pytest.raises(SteerEnvsError, match="bogus"):
        SteeringConfig.load(bad)
    with pytest.raises(SteerEnvsError, match="eps_sel"):
        SteeringConfig(eps_sel=1.5)


@pytest.mark.slow
def test_cli_run_killed_mid_round_resumes_and_finishes(tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({**TINY, "m": 4}))
    out = tmp_path / "cli"
    cmd = [
        sys.executable,
        "-m",
        "steer_envs.cli.main",
        "train",
        "steering",
        "--executor",
        "sim:default",
        "--out",
        str(out),
        "--config",
        str(cfg),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # wait for round 1's log line: a checkpoint exists, round 2 is running
    log = out / LOG_FILE
    wait_until(lambda: log.exists() and len(log.read_text().splitlines()) >= 1, 300, 21, "round 1's log line")
    proc.kill()
    proc.wait()
    done_before = load_checkpoint(out / CHECKPOINT_FILE)
    assert done_before["next_round"] < 4
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    rows = [json.loads(x) for x in (out / LOG_FILE).read_text().splitlines()]
    assert [r["round"] for r in rows] == [0, 1, 2, 3]
    final = load_checkpoint(out / CHECKPOINT_FILE)
    assert [(s.task_id, s.turn) for s in final["bank"]] == [(s.task_id, s.turn) for s in done_before["bank"]]


def test_bank_rollouts_give_several_rollouts_per_task(tmp_path):
    SteeringTrainer(_cfg(m=1, bank_rollouts=2, bank_tasks=6), tmp_path / "b2").run()
    bank = load_checkpoint(tmp_path / "b2" / CHECKPOINT_FILE)["bank"]
    starts = [s.task_id for s in bank if s.turn == 0]
    assert len(starts) == 12 and all(starts.count(t) == 2 for t in set(starts))  # each task rolled out twice


def test_rank_replay_adds_pairs_of_tasks_measured_in_earlier_rounds(tmp_path):
    kw = dict(m=2, bank_rollouts=2, bank_tasks=8, eps_sel=1.0)
    plain = SteeringTrainer(_cfg(**kw, rank_replay=False), tmp_path / "plain").run().log
    replay = SteeringTrainer(_cfg(**kw, rank_replay=True), tmp_path / "replay").run().log
    # round 0 has no history, so both runs are the same computation up to round 1's selection
    assert (
        plain[0]["loss"] == pytest.approx(replay[0]["loss"], abs=1e-6)
        and plain[0]["rank_pairs"] == replay[0]["rank_pairs"]
    )
    assert replay[1]["rank_pairs"] >= plain[1]["rank_pairs"]
    bank = load_checkpoint(tmp_path / "replay" / CHECKPOINT_FILE)["bank"]
    measured = [s for s in bank if s.q is not None]
    from agents.steering.objectives import same_task_pairs

    assert replay[1]["rank_pairs"] == len(same_task_pairs([s.task_id for s in measured], [s.q for s in measured]))


def test_rank_pairs_any_compares_states_of_different_tasks(tmp_path):
    kw = dict(m=1, bank_rollouts=1, bank_tasks=8, eps_sel=1.0)
    log = SteeringTrainer(_cfg(**kw, rank_pairs="any"), tmp_path / "any").run().log
    bank = load_checkpoint(tmp_path / "any" / CHECKPOINT_FILE)["bank"]
    measured = [s for s in bank if s.q is not None]
    from agents.steering.objectives import same_task_pairs

    qs = [s.q for s in measured]
    with_gap = sum(a - b > 1e-9 for a in qs for b in qs)
    assert log[0]["rank_pairs"] == min(with_gap, 16384)  # every ordered pair with a gap, whatever the task
    assert log[0]["rank_pairs"] > len(same_task_pairs([s.task_id for s in measured], qs))


def test_spearman_summary_ranks_within_and_across_tasks():
    from agents.steering.evaluate import spearman_summary

    # within each task z orders q perfectly; across tasks the task offsets reverse the order
    z = [1, 2, 3, 11, 12, 13]
    q = [10, 11, 12, 0, 1, 2]
    rep = spearman_summary(z, q, ["a", "a", "a", "b", "b", "b"], resamples=200)
    assert rep["within"] == pytest.approx(1.0) and rep["across"] < 0
    assert rep["tasks"] == 2 and rep["tasks_within"] == 2 and rep["states"] == 6
    assert rep["across_ci"][0] <= rep["across"] <= rep["across_ci"][1]


def test_fast_path_spearman_on_held_out_states_of_a_tiny_run(one_round_run, monkeypatch):
    from scipy import stats

    from agents.steering import evaluate
    from agents.steering.evaluate import fast_path_spearman, select_tasks
    from agents.steering.rollouts import make_steering_env

    steerer, _ = load_model(one_round_run)
    seen = {}
    real_measure = evaluate.measure_states

    def measure_and_keep(env, requests, *args, **kwargs):  # the real measurement, its inputs and outputs kept
        seen["requests"], seen["measured"] = requests, real_measure(env, requests, *args, **kwargs)
        return seen["measured"]

    monkeypatch.setattr(evaluate, "measure_states", measure_and_keep)
    ids = select_tasks("dev", benchmarks=["nq", "hotpotqa"], max_per_benchmark=2, seed=3)
    env = make_steering_env("sim:default", "dev", action_mode="discrete", benchmarks=["nq", "hotpotqa"])
    try:
        rep = fast_path_spearman(env, steerer, ids, G=2, N=2, max_states=12)
    finally:
        env.close()
    assert rep["N"] == 2 and rep["G"] == 2 and 0 < rep["states"] <= 12 and rep["tasks"] <= 4
    # recomputed from the measured states: z is the steerer's fast score of each state, q(s) the mean absolute
    # difference between each sampled intervention's mean return and the pass baseline
    keep = [i for i, m in enumerate(seen["measured"]) if m.usable]
    states = [seen["requests"][i][0] for i in keep]
    with torch.no_grad():
        z = steerer.fast_scores([s.observation for s in states]).float().numpy()
    q = np.array(
        [
            np.mean([abs(r - m.baseline) for r in m.returns if r is not None])
            for m in (seen["measured"][i] for i in keep)
        ]
    )
    assert rep["states"] == len(keep) and rep["tasks"] == len({s.task_id for s in states})
    assert rep["mean_q"] == pytest.approx(float(q.mean()))
    if len(set(q)) > 1 and len(set(z)) > 1:
        assert rep["across"] == pytest.approx(float(stats.spearmanr(z, q)[0]))
    else:
        assert np.isnan(rep["across"])


def test_encoder_steerer_builds_its_inputs_on_its_parameters_device():
    """The trainer's ``place`` moves the steerer to a GPU; every input tensor must follow it. The "meta" device
    stands in for CUDA here: a tensor built on the CPU meets the moved parameters and raises a device mismatch."""
    from agents.steering.steerer import SlowSample

    for fast_input in ("encoder", "stats"):
        steerer = EncoderSteerer(
            options_from_catalogue(STEERING), hash_dim=1 << 10, span_hash_dim=1 << 8, fast_input=fast_input
        ).to("meta")
        assert steerer.device.type == "meta"
        z = steerer.fast_scores([OBS, OBS])
        assert z.device.type == "meta" and tuple(z.shape) == (2,)
    h = steerer.hidden_states([OBS])
    assert h.device.type == "meta" and tuple(h.shape) == (1, steerer.hidden)
    pos = next(i for i, o in enumerate(steerer.options) if o.needs_argument)
    spans = argument_candidates(OBS, steerer.max_arguments)
    logits = steerer._argument_logits(OBS, h[0], pos, spans)
    assert logits.device.type == "meta" and tuple(logits.shape) == (len(spans),)
    sample = SlowSample(steerer.options[pos], spans[0], "", "", {"option_pos": pos, "arg_pos": 0, "spans": spans})
    logp = steerer.slow_logprobs(OBS, [sample, sample])
    assert logp.device.type == "meta" and tuple(logp.shape) == (2,)


class _DeviceOnlyTensor(torch.Tensor):
    """A tensor that, like a CUDA one, cannot become numpy before ``.cpu()``."""

    def numpy(self, *args, **kwargs):
        raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() first")

    def cpu(self, *args, **kwargs):
        return super().cpu(*args, **kwargs).as_subclass(torch.Tensor)


def test_fast_path_spearman_reads_scores_of_a_steerer_on_an_accelerator():
    from agents.steering.evaluate import fast_path_spearman, select_tasks
    from agents.steering.rollouts import make_steering_env

    steerer = EncoderSteerer(options_from_catalogue(STEERING), hash_dim=1 << 10, span_hash_dim=1 << 8)
    real_scores = steerer.fast_scores
    steerer.fast_scores = lambda observations: real_scores(observations).as_subclass(_DeviceOnlyTensor)
    with pytest.raises(TypeError, match="cpu"):  # the stand-in behaves like a CUDA tensor
        steerer.fast_scores([OBS]).float().numpy()
    ids = select_tasks("dev", benchmarks=["nq"], max_per_benchmark=1, seed=3)
    env = make_steering_env("sim:default", "dev", action_mode="discrete", benchmarks=["nq"])
    try:
        rep = fast_path_spearman(env, steerer, ids, G=2, N=1, max_states=3)
    finally:
        env.close()
    assert 0 < rep["states"] <= 3 and rep["tasks"] == 1
