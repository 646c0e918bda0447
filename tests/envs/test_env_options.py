"""The env option list is written once (EnvConfig's fields, docs in their metadata), the env factory is one
(``steer_envs.make_env``), the ids are constants, and the configs that share a protocol hash their flat form."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import pytest

import steer_envs
from steer_envs import EnvProtocol, make_env
from steer_envs.envs.base import EnvConfig, UnknownOptionError
from steer_envs.envs.cards import _options
from steer_envs.envs.guided import GuidedSearchConfig
from steer_envs.envs.handoff import HandoffEnvConfig
from steer_envs.envs.registration import env_ids
from steer_envs.errors import SteerEnvsError

REPO = Path(__file__).resolve().parents[2]
SUPERVISION_IDS = [
    steer_envs.STEERING_ENV,
    steer_envs.PLANNING_ENV,
    steer_envs.VERIFICATION_ENV,
    steer_envs.HANDOFF_ENV,
]


@pytest.mark.parametrize("config_class", [EnvConfig, HandoffEnvConfig, GuidedSearchConfig])
def test_every_option_has_a_doc(config_class):
    for f in dataclasses.fields(config_class):
        assert f.metadata.get("doc", "").strip(), f"{config_class.__name__}.{f.name} has no doc in its metadata"
    assert config_class.option_docs() == {f.name: f.metadata["doc"] for f in dataclasses.fields(config_class)}


@pytest.mark.parametrize("env_id", [*SUPERVISION_IDS, steer_envs.GUIDED_SEARCH_ENV])
def test_every_option_appears_in_the_card_with_its_doc(env_id):
    spec = gym.registry[env_id]
    creator = gym.envs.registration.load_env_creator(spec.entry_point)
    config_class = creator.config_class
    rows = {name: doc for name, _default, _type, doc in _options(creator, spec)}
    assert list(rows) == [f.name for f in dataclasses.fields(config_class)]
    assert rows == config_class.option_docs()
    assert creator.option_docs == config_class.option_docs()  # the class attribute is read from the fields too
    card = (REPO / "docs" / "envs" / (env_id.split("/", 1)[1] + ".md")).read_text(encoding="utf-8")
    for name, doc in rows.items():
        assert f"| `{name}` |" in card and doc.replace("|", "\\|") in card, (env_id, name)


def test_a_bad_keyword_is_a_clear_error_naming_the_valid_options():
    with pytest.raises(UnknownOptionError) as raised:
        gym.make(steer_envs.STEERING_ENV, split="dev", max_turn=3)
    message = str(raised.value)
    assert "'max_turn'" in message and "did you mean 'max_turns'" in message
    for name in EnvConfig.option_names():
        assert name in message
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, SteerEnvsError)
    with pytest.raises(UnknownOptionError, match="history_handoffs"):  # the hand-off env lists its own options
        gym.make(steer_envs.HANDOFF_ENV, split="dev", roless={})


def test_keywords_reach_the_config_as_before():
    env = gym.make(
        steer_envs.HANDOFF_ENV,
        executor="sim:default",
        split="dev",
        benchmarks="nq",
        max_turns=12,
        intervention_cost=1,
        history_handoffs=3,
        render_mode="ansi",
    )
    config = env.unwrapped.config
    assert isinstance(config, HandoffEnvConfig)
    assert (config.benchmarks, config.split, config.max_turns, config.intervention_cost) == (("nq",), "dev", 12, 1.0)
    assert env.unwrapped.history_handoffs == 3 and env.unwrapped.roles == {} and env.unwrapped.render_mode == "ansi"
    assert gym.make(steer_envs.HANDOFF_ENV, split="dev").unwrapped.config.max_turns == 30  # its own default
    with pytest.raises(SteerEnvsError, match="history_handoffs"):
        gym.make(steer_envs.HANDOFF_ENV, split="dev", history_handoffs=-1)


def _trace(env, seed: int, steps: int = 60):
    """Observations, rewards and the answer of a passing episode (passes only: interventions fit the note reader,
    which other tests cover)."""
    obs, info = env.reset(seed=seed)
    out = [info["task_id"], obs["transcript"]]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(0)
        out += [reward, obs["transcript"]]
        if terminated or truncated:
            break
    return out + [info.get("answer")]


@pytest.mark.parametrize("env_id", [steer_envs.STEERING_ENV, steer_envs.HANDOFF_ENV])
def test_make_env_equals_gym_make(env_id):
    protocol = EnvProtocol(split="dev", max_turns=5, intervention_cost=0.25, benchmarks=("nq", "hotpotqa"))
    made = make_env(env_id, protocol, action_mode="discrete")
    direct = gym.make(
        env_id,
        executor="sim:default",
        split="dev",
        max_turns=5,
        intervention_cost=0.25,
        benchmarks=["nq", "hotpotqa"],
        action_mode="discrete",
    )
    assert made.unwrapped.config == direct.unwrapped.config
    assert made.spec.id == direct.spec.id and type(made) is type(direct)
    for seed in (0, 1):
        assert _trace(made, seed) == _trace(direct, seed)
    assert make_env(env_id, split="dev").unwrapped.config == gym.make(env_id, split="dev").unwrapped.config
    with pytest.raises(SteerEnvsError, match="EnvProtocol"):
        make_env(env_id, {"split": "dev"})


def test_the_old_factories_call_make_env():
    from agents.steering.rollouts import make_steering_env
    from baselines.registry import MethodContext

    env = make_steering_env("sim:default", "dev", benchmarks=["nq"], max_turns=4, cost=0.5, action_mode="discrete")
    context = MethodContext(benchmarks=("nq",), max_turns=4, intervention_cost=0.5)
    via_context = context.make_env(steer_envs.STEERING_ENV, split="dev")
    expected = make_env(
        steer_envs.STEERING_ENV,
        EnvProtocol(benchmarks=("nq",), split="dev", max_turns=4, intervention_cost=0.5),
        action_mode="discrete",
    )
    assert env.unwrapped.config == via_context.unwrapped.config == expected.unwrapped.config
    assert _trace(env, 3) == _trace(expected, 3)


def test_the_ids_are_the_registered_ones():
    import baselines.registry as registry

    assert sorted(steer_envs.ENV_IDS) == sorted(env_ids())
    assert (registry.STEERING_ENV, registry.PLANNING_ENV, registry.VERIFICATION_ENV, registry.HANDOFF_ENV) == (
        steer_envs.STEERING_ENV,
        steer_envs.PLANNING_ENV,
        steer_envs.VERIFICATION_ENV,
        steer_envs.HANDOFF_ENV,
    )


def test_no_env_id_literal_outside_the_ids_module():
    """Code names the ids by their constants (docstrings and examples may spell them out)."""
    import ast

    offenders = []
    for folder in ("steer_envs", "agents", "baselines", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name == "ids.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {
                id(node.body[0].value)
                for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                and node.body
                and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)
            }
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docstrings
                    and node.value.startswith("steer_envs/")
                    and node.value.endswith("-v0")
                ):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {node.value}")
    assert not offenders, offenders


# -- the configs that hold the shared protocol ----------------------------------------------------------------------
def test_eval_config_holds_the_protocol_and_keeps_its_hash():
    from benchmarks.harness.config import EvalConfig

    # pinned: a config's hash is its run folder's identity, so a change here makes existing folders refuse to resume
    assert EvalConfig().config_hash() == "1a3c301f4e04"
    custom = EvalConfig(
        executor="sim:default",
        benchmarks=("hotpotqa", "nq"),
        split="dev",
        seeds=2,
        limit=5,
        max_turns=7,
        metric="em",
        intervention_cost=0.1,
    )
    assert custom.config_hash() == "c56c2accddb1"
    assert custom.env_protocol == EnvProtocol(
        benchmarks=("hotpotqa", "nq"), split="dev", max_turns=7, metric="em", intervention_cost=0.1
    )
    assert (custom.executor, custom.split, custom.max_turns, custom.seeds) == ("sim:default", "dev", 7, 2)
    assert EvalConfig.from_json(custom.to_json()) == custom
    moved = dataclasses.replace(custom, executor="sim:other", task_ids_sha="")
    assert moved.executor == "sim:other" and moved.seeds == 2 and moved.split == "dev"
    assert EvalConfig(split="dev", limit=3).to_json()["hash"] == "f88912279e9e"
    assert EvalConfig(skip=40).config_hash() != EvalConfig().config_hash()  # every protocol field is hashed


def test_steering_config_holds_the_protocol_and_hashes_its_flat_form(tmp_path):
    from agents.steering.config import SteeringConfig

    custom = SteeringConfig(
        benchmarks=["nq"],
        intervention_cost=0.05,
        max_turns=6,
        split="dev",
        executor="sim:default",
        data_dir="/x",
        env_id=steer_envs.HANDOFF_ENV,
    )
    assert custom.fingerprint() != SteeringConfig().fingerprint()
    assert custom.fingerprint() != SteeringConfig(**{**custom.to_dict(), "intervention_cost": 0.0}).fingerprint()
    assert custom.env_protocol.intervention_cost == custom.intervention_cost == 0.05
    data = custom.to_dict()
    assert "env_protocol" not in data and data["benchmarks"] == ["nq"] and data["intervention_cost"] == 0.05
    path = tmp_path / "steer.toml"
    path.write_text(
        'executor = "sim:default"\nbenchmarks = ["nq"]\nsplit = "dev"\nmax_turns = 6\nintervention_cost = 0.05\n'
        'data_dir = "/x"\nenv_id = "steer_envs/HandoffSteering-v0"\n'
    )
    loaded = SteeringConfig.load(path)
    assert loaded.fingerprint() == custom.fingerprint() and loaded.to_dict() == data
    custom.split = "test"  # a mutable config's protocol fields stay assignable
    assert custom.env_protocol.split == "test"
    with pytest.raises(SteerEnvsError, match="unknown steering config keys"):
        SteeringConfig.from_dict({"env_protocol": {}})
    with pytest.raises(SteerEnvsError, match="unknown steering config keys.*intervention_cost"):
        SteeringConfig.from_dict({"cost": 0.1})  # one name per field


def test_method_context_holds_the_protocol():
    from baselines.registry import MethodContext

    context = MethodContext(executor="sim:default", benchmarks=("nq",), max_turns=4, metric="em")
    assert context.env_protocol == EnvProtocol(benchmarks=("nq",), max_turns=4, metric="em")
    assert (context.max_turns, context.metric) == (4, "em")
