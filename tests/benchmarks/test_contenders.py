"""Any registered method is a contender of the one protocol: what its registry entry declares (learns, a seed
option, a budget knob, a rate knob) drives training seeds, budget metering and the dev search, and a row that
overspends the protocol's budget or cannot reach its rate is marked and never takes the ★ or the verdict. The
methods here are registered by the test (as a plugin's entry point would), never named in the harness."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from baselines.base import STEERING_ENV, Method, MethodContext
from baselines.options import MethodOptions, method_option
from baselines.registry import METHODS, build_policy
from benchmarks.harness.comparison import Comparison
from benchmarks.harness.protocols import plan_for
from steer_envs.paths import REPO_ROOT

COMPARISON_CODE = ("benchmarks/harness/comparison.py", "benchmarks/harness/operating.py")
BUILTIN_NAMES = (
    "no_supervision", "random", "best_fixed_rule", "steering_untrained", "filtered_bc", "sb3_ppo", "steering_rl",
    "oracle", "planning_rl", "verification_rl", "fixed_rule",
)  # fmt: skip


def test_no_built_in_method_name_chooses_anything_in_the_comparison_code():
    """The names live in the protocol presets and the registry entries; the harness reads what a method declares."""
    for path in COMPARISON_CODE:
        code = (REPO_ROOT / path).read_text(encoding="utf-8")
        for name in BUILTIN_NAMES:
            assert not re.search(rf"[\"']{name}[\"':]", code), f"{path} names {name!r}"
            assert not re.search(rf"\b{name.upper()}\b", code), f"{path} holds a constant for {name!r}"


@dataclass(frozen=True)
class SpenderOptions(MethodOptions):
    seed: int = method_option(0, "training seed", ge=0)
    episodes: int = method_option(150, "episodes of the train split it steps through while 'training'", ge=1)


@dataclass(frozen=True)
class EagerOptions(MethodOptions):
    p: float = method_option(0.5, "a rate knob the policy ignores: no value reaches the target", ge=0, le=1)


class EveryDecision:
    """The oracle's note where it has one, else the first note: an intervention at every decision."""

    name = "eager"

    def __init__(self, oracle) -> None:
        self.oracle = oracle

    def bind(self, env) -> None:  # the oracle looks ahead in the env it acts in
        self.oracle.bind(env)

    def reset(self, seed=None) -> None:
        self.oracle.reset(seed)

    def act(self, observation, info) -> int:
        return int(self.oracle.act(observation, info)) or 1


def _oracle(context: MethodContext):
    return build_policy("oracle", MethodContext(**{**context.__dict__, "options": None}))


def _build_spender(context: MethodContext):
    """Spends ``episodes`` episodes of env steps on the train split, whatever the protocol's budget, then acts as
    the oracle (a strong row: if budgets were not checked it would take the ★)."""
    options = context.options_of(SpenderOptions)
    env = context.make_env(split="train")
    for episode in range(options.episodes):
        env.reset(seed=options.seed * 10_000 + episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    env.close()
    return _oracle(context)


def _build_eager(context: MethodContext):
    return EveryDecision(_oracle(context))


SPENDER = Method("spender", "oracle after overspending", STEERING_ENV, _build_spender, SpenderOptions, learns=True)
EAGER = Method("eager", "an intervention at every decision", STEERING_ENV, _build_eager, EagerOptions,
               rate_knob="p", knob_scale="unit")  # fmt: skip


@pytest.mark.slow
def test_an_overspending_row_and_a_row_off_the_rate_are_marked_and_never_starred(tmp_path, monkeypatch):
    for method in (SPENDER, EAGER):
        monkeypatch.setitem(METHODS._factories, method.name, method)
    plan = plan_for(
        "demo-quick",
        tmp_path / "cmp",
        methods=["spender", "eager"],
        without=["filtered_bc", "sb3_ppo"],
        benchmarks=("nq", "hotpotqa"),
        train_seeds=3,
        limit=2,
        dev_limit=2,
        curves=False,
        spearman_tasks=0,
        progress=False,
    )
    Comparison(plan, log=lambda _: None).run()
    data = json.loads(Path(plan.out, "comparison.json").read_text(encoding="utf-8"))
    spender, eager = data["rows"]["spender"], data["rows"]["eager"]
    assert len(spender["labels"]) == 3 and [json.dumps(label).count("seed=") for label in spender["labels"]] == [1] * 3
    assert spender["matched"] and not spender["budget_matched"]  # no budget knob: spent as it came, off the budget
    assert "off the budget by +" in spender["budget"]
    assert not eager["matched"] and eager["budget_matched"]  # its knob cannot bring the rate to the target
    assert eager["dev_rate"] > plan.target + plan.tolerance
    table = Path(plan.out, "comparison.md").read_text(encoding="utf-8")
    starred = [line for line in table.splitlines() if line.startswith("| **★")]
    assert len(starred) <= 1 and not any("spender" in line or "eager" in line for line in starred)
    (note,) = [line for line in table.splitlines() if line.startswith("*Not matched:")]
    assert "`spender`" in note and "`eager`" in note
    verdict = next(line for line in table.splitlines() if line.startswith("**Verdict:**"))
    assert "No verdict against" in verdict  # the focus row (the last added, eager) is not matched
