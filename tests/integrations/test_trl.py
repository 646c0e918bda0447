"""The TRL environments: episodes equal gymnasium's, and real GRPOTrainer steps reach the envs and learn from them."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401 - registers the ids
from steer_envs.errors import SteerEnvsError
from steer_envs.integrations.trl import (
    GuidedSearchTools,
    HandoffSteeringTools,
    SearchSteeringTools,
    make_environment_factory,
    row_seed,
    task_dataset,
)
from steer_envs.llm.tool_model import ANSWER_NOW  # the note the tiny tool model learned to send


def _gym_episode(env_id, seed, task_id, actions, **kwargs):
    env = gym.make(env_id, action_mode="text", **kwargs)
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    rewards = []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            break
    return rewards, obs, info


def test_guided_search_episode_equals_gymnasium():
    row = task_dataset(limit=3)[2]
    tools = GuidedSearchTools()
    first = tools.reset(**row)
    assert row["question"] in first
    result = tools.search("first nobel prize physics")
    assert "<information>" in result
    tools.answer("Wilhelm Conrad Röntgen")
    rewards, obs, info = _gym_episode(
        "steer_envs/GuidedSearch-v0", row["seed"], row["task_id"], tools.actions + ["<answer> never reached </answer>"]
    )
    assert tools.actions == [
        "<search> first nobel prize physics </search>",
        "<answer> Wilhelm Conrad Röntgen </answer>",
    ]
    assert rewards == tools.rewards and tools.get_reward() == sum(rewards)
    assert obs["transcript"] == tools.unwrapped.state.transcript
    assert info["answer"] == tools.last_info["answer"]
    assert tools.search("more") == "The episode is over; no further actions are taken." and len(tools.actions) == 2


@pytest.mark.parametrize(
    "cls, actions",
    [
        (SearchSteeringTools, [("intervene", ANSWER_NOW), ("pass_turn",)]),
        (
            HandoffSteeringTools,
            [("note", "Check the dates."), ("reject", "Use the second passage."), ("pass_handoff",)],
        ),
    ],
)
def test_supervision_episode_equals_gymnasium(cls, actions):
    row = task_dataset(cls.env_id, limit=2)[1]
    tools = cls()
    tools.reset(**row)
    for name, *args in actions:
        getattr(tools, name)(*args)
    reward = tools.get_reward()  # silence = pass: the episode is played out
    assert tools.done and len(tools.actions) >= len(actions)
    rewards, obs, info = _gym_episode(cls.env_id, row["seed"], row["task_id"], tools.actions, executor="sim:default")
    assert rewards == tools.rewards and math.isclose(reward, sum(rewards))
    assert info["answer"] == tools.last_info["answer"] and info["f1"] == tools.last_info["f1"]


def test_dataset_rows_are_deterministic_and_from_the_split():
    a = task_dataset("steer_envs/SearchSteering-v0", split="dev", limit=5, seed=3)
    b = task_dataset("steer_envs/SearchSteering-v0", split="dev", limit=5, seed=3)
    assert a.to_dict() == b.to_dict()
    assert a["seed"] == [row_seed(3, i) for i in range(5)] and len(set(a["seed"])) == 5
    env = gym.make("steer_envs/SearchSteering-v0", split="dev")
    assert a["task_id"] == [t.id for t in env.unwrapped.tasks[:5]]
    assert a[0]["prompt"][0]["role"] == "user"


def test_bad_options_and_arguments_are_clear_errors():
    with pytest.raises(SteerEnvsError, match="env_id"):
        make_environment_factory("steer_envs/Nope-v0")
    with pytest.raises(SteerEnvsError, match="action_mode"):
        make_environment_factory("steer_envs/GuidedSearch-v0", action_mode="discrete")
    tools = SearchSteeringTools(max_argument_chars=10)
    with pytest.raises(SteerEnvsError, match="reset"):
        tools.pass_turn()
    tools.reset(**task_dataset("steer_envs/SearchSteering-v0", limit=1)[0])
    with pytest.raises(SteerEnvsError, match="limit is 10"):
        tools.intervene("x" * 11)
    with pytest.raises(SteerEnvsError, match="pass_turn"):
        tools.intervene("pass")
    handoff = HandoffSteeringTools()
    handoff.reset(**task_dataset("steer_envs/HandoffSteering-v0", limit=1)[0])
    with pytest.raises(SteerEnvsError, match="reject"):
        handoff.note("Reject: no")


def test_the_package_the_cli_and_the_trl_module_import_neither_trl_nor_openenv():
    code = (
        "import sys, steer_envs, steer_envs.integrations.trl; from steer_envs.cli.main import build_parser; "
        "build_parser(); print([m for m in ('trl', 'openenv', 'datasets') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(), timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- real GRPOTrainer steps ------------------------------------------------------------------------------------


def _recording(cls):
    """A test env recording every tool action and every reward TRL collects, across TRL's pooled instances."""

    class Recording(cls):
        log: list = []  # the actions the model's tool calls sent to the env
        returns: list = []
        _finishing = False

        def _act(self, action):
            if not self._finishing and not self.done:
                Recording.log.append(action)
            return super()._act(action)

        def get_reward(self):
            self._finishing = True  # the passes that play out an unfinished episode are not tool calls
            try:
                value = super().get_reward()
            finally:
                self._finishing = False
            Recording.returns.append(value)
            return value

    Recording.__name__ = "Recording" + cls.__name__
    return Recording


def tool_model_and_data():
    """The tiny tool-calling model that ``steer-envs build-tiny-model`` writes (cached) and the one-row datasets it
    was warmed up on (also used by the README's TRL block test)."""
    from steer_envs.llm.tool_model import cached_tool_model, default_cases

    tasks = default_cases()
    return cached_tool_model(tasks.cases), {"guided": tasks.guided, "steering": tasks.steering}


@pytest.fixture(scope="module")
def grpo_setup():
    pytest.importorskip("trl")
    return tool_model_and_data()


def _train(path, dataset, env_cls, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        per_device_train_batch_size=4,
        num_generations=4,
        max_steps=2,
        max_completion_length=256,
        max_tool_calling_iterations=2,
        learning_rate=1e-3,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model, args=args, train_dataset=dataset, processing_class=tokenizer, environment_factory=env_cls
    )
    trainer.train()
    changed = any(not torch.equal(before[n], p) for n, p in model.named_parameters())
    logs = [h for h in trainer.state.log_history if "reward" in h]
    return logs, changed


def _check_rewards(logs, env_cls, changed):
    assert len(logs) == 2 and len(env_cls.returns) == 8  # 2 steps x 4 rollouts, one get_reward each
    for step, log in enumerate(logs):
        chunk = env_cls.returns[4 * step : 4 * step + 4]
        assert math.isclose(log[f"rewards/{env_cls.__name__}/mean"], sum(chunk) / 4, abs_tol=1e-6)
        assert math.isclose(log["reward"], sum(chunk) / 4, abs_tol=1e-6)
    differed = [len(set(env_cls.returns[4 * s : 4 * s + 4])) > 1 for s in range(2)]
    assert any(differed), f"no group's rewards differed: {env_cls.returns}"
    assert changed  # a group with different rewards has a non-zero advantage: the update moves the parameters


@pytest.mark.slow
def test_grpo_trainer_steps_on_guided_search(grpo_setup, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    path, data = grpo_setup
    env_cls = _recording(GuidedSearchTools)
    logs, changed = _train(path, data["guided"], env_cls, tmp_path)
    assert env_cls.log and all(a.startswith(("<search> ", "<answer> ")) for a in env_cls.log)
    _check_rewards(logs, env_cls, changed)


@pytest.mark.slow
def test_grpo_trainer_steps_on_search_steering(grpo_setup, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    path, data = grpo_setup
    env_cls = _recording(SearchSteeringTools)
    logs, changed = _train(path, data["steering"], env_cls, tmp_path)
    assert env_cls.log and set(env_cls.log) <= {"pass", ANSWER_NOW}
    _check_rewards(logs, env_cls, changed)
