"""Hand-off at every hand-off: the slow path may pass, and training may continue episodes under
the current policy so repeated interventions are in the labels. Tiny configs on the real simulated pipeline."""

from __future__ import annotations

import json
from dataclasses import replace

import gymnasium as gym
import pytest
import torch

from agents.steering.agent import SteeringAgent
from agents.steering.config import SteeringConfig
from agents.steering.encoder import EncoderSteerer
from agents.steering.interventions import options_from_catalogue
from agents.steering.rollouts import ContinuationPolicy, collect_state_bank, continuation_outcome
from baselines.handoff import HANDOFF_ENV, OPEN_GATE_TAU
from steer_envs.envs.catalogue import HANDOFF
from steer_envs.errors import SteerEnvsError

DIM = 1 << 12


def _pass_loving_steerer() -> EncoderSteerer:
    steerer = EncoderSteerer(options_from_catalogue(HANDOFF), hash_dim=DIM, features="handoff", slow_pass=True)
    with torch.no_grad():
        steerer.option_head.bias[-1] = 50.0  # the pass output dominates every option
    return steerer.eval()


def test_the_slow_path_can_choose_pass_and_then_no_note_is_sent():
    env = gym.make(HANDOFF_ENV, split="dev", action_mode="discrete", max_turns=12)
    obs, _ = env.reset(seed=3)
    steerer = _pass_loving_steerer()
    samples = steerer.sample_slow(obs, 4, torch.Generator().manual_seed(0))
    assert all(s.is_pass and s.to_action("discrete") == 0 and s.to_action("text") == "pass" for s in samples)
    assert torch.isfinite(steerer.slow_logprobs(obs, samples)).all()  # GRPO can re-score a pass sample
    agent = SteeringAgent(steerer, tau=OPEN_GATE_TAU, action_mode="discrete")
    done = False
    while not done:
        action = agent.act(obs)
        assert agent.last["fired"] and action == 0  # the gate opened, the slow path passed
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert int(obs["interventions"]) == 0 and info["interventions"] == 0
    # the default slow path has no pass (the earlier architecture: spec and shapes unchanged)
    default = EncoderSteerer(options_from_catalogue(HANDOFF), hash_dim=DIM, features="handoff")
    assert "slow_pass" not in default.build_spec() and default.option_head.out_features == len(HANDOFF) - 1
    assert steerer.build_spec()["slow_pass"] is True and steerer.option_head.out_features == len(HANDOFF)
    rebuilt = EncoderSteerer(steerer.options, **steerer.build_spec())
    rebuilt.load_state_dict(steerer.state_dict())
    assert rebuilt.sample_slow(obs, 1, torch.Generator().manual_seed(0))[0].is_pass


def test_pass_prior_sets_the_slow_paths_initial_probability_of_pass():
    env = gym.make(HANDOFF_ENV, split="dev", action_mode="discrete", max_turns=12)
    observations = [env.reset(seed=seed)[0] for seed in range(6)]
    options = options_from_catalogue(HANDOFF)

    def pass_probability(steerer: EncoderSteerer) -> float:
        with torch.no_grad():
            return float(sum(steerer._distributions(obs)[1][-1].exp() for obs in observations) / len(observations))

    plain = EncoderSteerer(options, hash_dim=DIM, features="handoff", slow_pass=True)
    for prior in (0.5, 0.8, 0.95):
        steerer = EncoderSteerer(options, hash_dim=DIM, features="handoff", slow_pass=True, pass_prior=prior)
        assert pass_probability(steerer) == pytest.approx(prior, abs=0.05)
        assert steerer.build_spec()["pass_prior"] == prior
        rebuilt = EncoderSteerer(options, **steerer.build_spec())
        rebuilt.load_state_dict(steerer.state_dict())
        assert pass_probability(rebuilt) == pytest.approx(pass_probability(steerer))
    assert pass_probability(plain) < 0.2 and "pass_prior" not in plain.build_spec()  # about 1 / len(HANDOFF)
    # the prior changes only the pass bias: every other parameter is the plain initialisation of the same seed
    primed = EncoderSteerer(options, hash_dim=DIM, features="handoff", slow_pass=True, pass_prior=0.8).state_dict()
    for name, value in plain.state_dict().items():
        if name == "option_head.bias":
            assert torch.equal(value[:-1], primed[name][:-1]) and value[-1] != primed[name][-1]
        else:
            assert torch.equal(value, primed[name]), name
    with pytest.raises(SteerEnvsError, match="needs slow_pass=True"):
        EncoderSteerer(options, hash_dim=DIM, features="handoff", pass_prior=0.8)
    with pytest.raises(SteerEnvsError, match=r"must be in \(0, 1\)"):
        EncoderSteerer(options, hash_dim=DIM, features="handoff", slow_pass=True, pass_prior=1.0)


def test_pass_reads_fast_makes_pass_likelier_where_the_fast_path_sees_less_to_gain():
    env = gym.make(HANDOFF_ENV, split="dev", action_mode="discrete", max_turns=12)
    observations = [env.reset(seed=seed)[0] for seed in range(4)]
    options = options_from_catalogue(HANDOFF)
    steerer = EncoderSteerer(
        options, hash_dim=DIM, features="handoff", slow_pass=True, pass_prior=0.5, pass_reads_fast=True
    )
    plain = EncoderSteerer(options, hash_dim=DIM, features="handoff", slow_pass=True, pass_prior=0.5)

    def pass_logit_gap(model: EncoderSteerer, obs) -> float:  # log p(pass) − log p(first option)
        with torch.no_grad():
            logp = model._distributions(obs)[1]
        return float(logp[-1] - logp[0])

    for obs in observations:
        # the same seed builds the same head: pass_reads_fast subtracts g·z (g = 1 at start) from the pass logit only
        z = float(steerer.fast_scores([obs])[0])
        assert pass_logit_gap(steerer, obs) == pytest.approx(pass_logit_gap(plain, obs) - z, abs=1e-5)
    with torch.no_grad():
        steerer.fast_head.bias += 5.0  # the fast path now sees a note as worth more in every state
    assert all(
        pass_logit_gap(steerer, obs)
        == pytest.approx(pass_logit_gap(plain, obs) - float(steerer.fast_scores([obs])[0]), abs=1e-4)
        for obs in observations
    )
    assert all(pass_logit_gap(steerer, obs) < pass_logit_gap(plain, obs) - 4.0 for obs in observations)
    # z is read, not trained through: GRPO's gradient on a pass sample reaches the gain and the heads, not fast_head
    samples = steerer.sample_slow(observations[0], 3, torch.Generator().manual_seed(0))
    steerer.slow_logprobs(observations[0], samples).sum().backward()
    assert steerer.fast_head.weight.grad is None and steerer.pass_gain.grad is not None
    spec = steerer.build_spec()
    assert spec["pass_reads_fast"] is True and "pass_reads_fast" not in plain.build_spec()
    rebuilt = EncoderSteerer(options, **spec)
    rebuilt.load_state_dict(steerer.state_dict())
    assert pass_logit_gap(rebuilt, observations[1]) == pytest.approx(pass_logit_gap(steerer, observations[1]))
    with pytest.raises(SteerEnvsError, match="needs slow_pass=True"):
        EncoderSteerer(options, hash_dim=DIM, features="handoff", pass_reads_fast=True)
    # the deployment shift of the pass logit: exactly B nats, and no part of the architecture or the weights
    before = pass_logit_gap(steerer, observations[2])
    steerer.pass_bias = 2.5
    assert pass_logit_gap(steerer, observations[2]) == pytest.approx(before + 2.5, abs=1e-5)
    assert steerer.build_spec() == spec and set(steerer.state_dict()) == set(rebuilt.state_dict())


class _Counting(ContinuationPolicy):
    """The real policy, counting the interventions its agents make (to see that continuations repeat them)."""

    acted = 0

    def agent(self, seed):
        inner = super().agent(seed)
        outer = self

        class Agent:
            def act(self, obs, info=None):
                action = inner.act(obs, info)
                outer.acted += int(action != 0)
                return action

        return Agent()


def test_policy_continuations_repeat_interventions_and_are_deterministic():
    from steer_envs.data import load_tasks

    task = load_tasks("nq", "train")[0]
    env = gym.make(HANDOFF_ENV, split="train", action_mode="discrete", max_turns=12, benchmarks=["nq"])
    bank = collect_state_bank(env, [task.id], 11, "discrete")
    state = bank[1]
    steerer = EncoderSteerer(options_from_catalogue(HANDOFF), hash_dim=DIM, features="handoff").eval()
    alone = continuation_outcome(env, state, 3, 5, "discrete")
    counting = _Counting(steerer, gate="open")
    first = continuation_outcome(env, state, 3, 5, "discrete", counting)
    assert counting.acted >= 1  # later decisions were taken by the (never-passing, open-gate) steerer
    again = continuation_outcome(env, state, 3, 5, "discrete", ContinuationPolicy(steerer, gate="open"))
    assert again == first and not first.failed and not alone.failed
    with pytest.raises(SteerEnvsError, match="continuation gate"):
        ContinuationPolicy(steerer, gate="sometimes")


def _tiny(tmp_path, name: str, **overrides):
    from agents.steering.trainer import SteeringTrainer

    config = SteeringConfig(
        env_id=HANDOFF_ENV,
        benchmarks=["nq"],
        split="train",
        max_turns=12,
        action_mode="discrete",
        m=1,
        k=3,
        G=2,
        N=1,
        bank_tasks=2,
        bank_rollouts=1,
        **overrides,
    )
    result = SteeringTrainer(config, tmp_path / name).run()
    rows = [{k: v for k, v in row.items() if k not in ("wall_s", "round_s")} for row in result.log]
    from agents.steering.trainer import load_model

    steerer, _ = load_model(tmp_path / name)
    return config, rows, steerer


@pytest.mark.slow
def test_repeated_intervention_training_is_deterministic_and_enters_the_fingerprint(tmp_path):
    args = {"features": "handoff", "slow_pass": True}
    config, rows, steerer = _tiny(tmp_path, "a", backbone_args=args, continuation="policy", continuation_gate="open")
    _, rows_again, steerer_again = _tiny(
        tmp_path, "b", backbone_args=args, continuation="policy", continuation_gate="open"
    )
    assert rows == rows_again and rows[0]["rollouts"] > 0
    assert all(torch.equal(a, b) for a, b in zip(steerer.state_dict().values(), steerer_again.state_dict().values()))
    assert json.loads((tmp_path / "a" / "config.json").read_text())["config"]["continuation"] == "policy"
    assert SteeringConfig(env_id=HANDOFF_ENV).fingerprint() != SteeringConfig().fingerprint()
    assert config.fingerprint() != replace(config, continuation="pass", continuation_gate="tau").fingerprint()
    with pytest.raises(SteerEnvsError, match="continuation must be one of"):
        SteeringConfig(continuation="greedy")


@pytest.mark.slow  # two harness runs of the pipeline: minutes on the loaded 2-core machine
def test_every_handoff_with_a_slow_pass_sends_fewer_notes_on_the_same_seeds(tmp_path):
    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate

    folder = RunFolder(
        tmp_path / "run", EvalConfig(benchmarks=("nq", "hotpotqa"), split="dev", seeds=1, limit=2, max_turns=12)
    )
    forced = evaluate(folder, "handoff_zero_shot:every=1", progress=False).records
    passing = evaluate(folder, "handoff_zero_shot:every=1,slow_pass=1", progress=False).records
    assert [r.task_id for r in forced] == [r.task_id for r in passing]
    assert all(r.interventions == r.decisions for r in forced)  # no pass in the default slow path
    notes = sum(r.interventions for r in passing)
    assert notes < sum(r.interventions for r in forced) and notes < sum(r.decisions for r in passing)
    with pytest.raises(SteerEnvsError, match="add slow_pass=1"):
        evaluate(folder, "handoff_zero_shot:every=1,pass_prior=0.8", progress=False)
    shifted = evaluate(folder, "handoff_zero_shot:every=1,slow_pass=1,pass_bias=4", progress=False).records
    assert sum(r.interventions for r in shifted) < notes  # a pass logit 4 nats higher lets more hand-offs by
    chosen = evaluate(folder, "handoff_zero_shot:every=1,slow_pass=1,pass_bias=dev,dev_tasks=1", progress=False)
    choice = json.loads(next((tmp_path / "run" / "checkpoints").glob("*/pass_bias_for_f1.json")).read_text())
    assert choice["split"] == "dev" and set(choice["dev_f1"]) == {"0", "1", "2", "3", "4"}
    assert choice["dev_f1"][f"{choice['pass_bias']:g}"] == max(choice["dev_f1"].values()) and chosen.records
    with pytest.raises(SteerEnvsError, match="needs slow_pass=1"):
        evaluate(folder, "handoff_zero_shot:every=1,pass_bias=2", progress=False)
    with pytest.raises(SteerEnvsError, match="pass_reads_fast .* add slow_pass=1"):
        evaluate(folder, "handoff_zero_shot:every=1,pass_reads_fast=1", progress=False)
    with pytest.raises(SteerEnvsError, match="continuation_gate applies to continuation=policy"):
        evaluate(folder, "handoff_rl:every=1,continuation_gate=open,m=1,k=1,G=1,N=1,bank_tasks=1", progress=False)
