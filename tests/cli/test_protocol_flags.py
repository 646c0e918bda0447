"""The env protocol's CLI flags are generated from :class:`steer_envs.EnvProtocol` (``steer_envs.cli.common``):
a new protocol field becomes a flag without touching any command, and the commands build the same configs as
when they wrote the flags by hand."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
import typing
from pathlib import Path

import pytest

import steer_envs.protocol
from benchmarks.cli import EVAL_PROTOCOL_EXCLUDE, _config
from benchmarks.harness.config import EvalConfig
from steer_envs.cli.common import add_protocol_arguments, protocol_flag, protocol_from_args, protocol_kwargs
from steer_envs.cli.main import build_parser
from steer_envs.data import BENCHMARKS
from steer_envs.errors import SteerEnvsError
from steer_envs.protocol import PROTOCOL_FIELDS, EnvProtocol


def _actions(parser: argparse.ArgumentParser, *path: str) -> dict[str, argparse.Action]:
    """The option actions of a (sub)command, by flag."""
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return {s: a for a in parser._actions for s in a.option_strings}


def test_a_new_protocol_field_becomes_a_flag_of_eval(monkeypatch, tmp_path):
    extended = dataclasses.make_dataclass(
        "ExtendedProtocol",
        [("patience", int, dataclasses.field(default=7, metadata={"doc": "turns to wait"}))],
        bases=(EnvProtocol,),
        kw_only=True,
    )
    monkeypatch.setattr(steer_envs.protocol, "EnvProtocol", extended)
    flags = _actions(build_parser(), "eval")
    hints = typing.get_type_hints(extended)
    for f in dataclasses.fields(extended):  # every field but the excluded ones, with its type
        if f.name in EVAL_PROTOCOL_EXCLUDE:
            assert protocol_flag(f.name) not in flags
            continue
        action = flags[protocol_flag(f.name)]
        assert action.dest == f.name
        scalar = next((a for a in typing.get_args(hints[f.name]) if a is not type(None)), hints[f.name])
        if typing.get_origin(scalar) is tuple:
            assert action.nargs == "+"
        elif scalar in (int, float):
            assert action.type is scalar
    knob = flags["--patience"]
    assert (knob.type, knob.default) == (int, 7) and knob.help.startswith("turns to wait")
    args = build_parser().parse_args(["eval", "--method", "none", "--out", str(tmp_path), "--patience", "3"])
    assert protocol_kwargs(args)["patience"] == 3


def test_help_comes_from_the_env_config_docs():
    from steer_envs.envs.base import EnvConfig

    docs = {f.name: f.metadata["doc"] for f in dataclasses.fields(EnvConfig)}
    flags = _actions(build_parser(), "eval")
    assert flags["--max-turns"].help == f"{docs['max_turns']} (default 10)"
    assert flags["--split"].help == f"{docs['split']} (default test)"


SAMPLE = [
    "--executor",
    "sim:weak",
    "--benchmarks",
    "nq",
    "hotpotqa",
    "--split",
    "dev",
    "--seeds",
    "2",
    "--limit",
    "5",
    "--max-turns",
    "7",
    "--intervention-cost",
    "0.05",
    "--data-dir",
    "/data/here",
]


@pytest.mark.parametrize(
    "argv,before",
    [
        (
            SAMPLE,
            dict(
                executor="sim:weak",
                benchmarks=("nq", "hotpotqa"),
                split="dev",
                seeds=2,
                limit=5,
                max_turns=7,
                intervention_cost=0.05,
                data_dir="/data/here",
            ),
        ),
        (
            [],
            dict(
                executor="sim:default",
                benchmarks=tuple(BENCHMARKS),
                split="test",
                seeds=3,
                limit=0,
                max_turns=10,
                intervention_cost=0.0,
                data_dir=None,
            ),
        ),
    ],
)
def test_eval_args_build_the_same_eval_config_as_before(tmp_path, argv, before):
    args = build_parser().parse_args(["eval", "--method", "none", "--out", str(tmp_path), *argv])
    config = _config(args)
    old = EvalConfig(**before)  # what benchmarks.cli._config built from the hand-written flags
    assert config == old and config.config_hash() == old.config_hash()
    assert config.data_dir == old.data_dir  # not part of equality (compare=False): checked apart
    assert type(config.benchmarks) is tuple


def test_steering_train_flags_replace_only_what_was_given(monkeypatch, tmp_path):
    import agents.steering.trainer as trainer
    from agents.steering.cli import run

    seen = {}

    class Trainer:
        def __init__(self, config, out, **kwargs):
            seen["config"] = config

        def run(self):
            return trainer.TrainResult(tmp_path, 0, 0.0, [])

    monkeypatch.setattr(trainer, "SteeringTrainer", Trainer)
    config_file = tmp_path / "c.json"
    config_file.write_text('{"executor": "sim:loopy", "data_dir": "/from/config", "max_turns": 6}')
    parser = build_parser()

    def kept():
        return seen["config"].executor, seen["config"].data_dir, seen["config"].max_turns

    run(parser.parse_args(["train", "steering", "--out", str(tmp_path / "a"), "--config", str(config_file)]))
    assert kept() == ("sim:loopy", "/from/config", 6)
    run(
        parser.parse_args(
            [
                "train",
                "steering",
                "--out",
                str(tmp_path / "b"),
                "--config",
                str(config_file),
                "--executor",
                "sim:weak",
                "--data-dir",
                "/from/flag",
            ]
        )
    )
    assert kept() == ("sim:weak", "/from/flag", 6)


def test_serve_env_flags_win_over_env_kwargs():
    from steer_envs.cli.serve_env_command import _env_kwargs

    parser = build_parser()
    given = '{"split": "dev", "executor": "sim:loopy"}'
    args = parser.parse_args(["serve-env", "SearchSteering-v0", "--env-kwargs", given])
    assert _env_kwargs(args) == {"split": "dev", "executor": "sim:loopy"}
    args = parser.parse_args(
        ["serve-env", "SearchSteering-v0", "--env-kwargs", given, "--executor", "sim:weak", "--data-dir", "/d"]
    )
    assert _env_kwargs(args) == {"split": "dev", "executor": "sim:weak", "data_dir": "/d"}


def test_selection_and_per_command_defaults():
    parser = argparse.ArgumentParser()
    added = add_protocol_arguments(
        parser,
        include=("split", "max_turns", "benchmarks"),
        defaults={"max_turns": 30},
        overrides={"split": {"choices": ("dev", "test")}},
    )
    assert added == ("benchmarks", "split", "max_turns")  # field order, whatever the include order
    args = parser.parse_args(["--split", "dev"])
    assert protocol_kwargs(args) == {"benchmarks": None, "split": "dev", "max_turns": 30}
    assert protocol_from_args(args) == EnvProtocol(split="dev", max_turns=30)  # None keeps the protocol's value
    with pytest.raises(SystemExit):
        parser.parse_args(["--split", "train"])  # the command's own choices


def test_a_name_that_is_no_protocol_field_is_a_clear_error():
    with pytest.raises(SteerEnvsError, match=r"exclude: \['max_turn'\] are no EnvProtocol fields; the fields are "):
        add_protocol_arguments(argparse.ArgumentParser(), exclude=("max_turn",))


# -- no protocol flag written by hand ------------------------------------------------------------------------------
REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("steer_envs", "agents", "baselines", "benchmarks")
#: the one home of the protocol's flags (``add_protocol_arguments``, ``add_data_dir``)
HOME = "steer_envs/cli/common.py"
#: hand-written protocol flags kept on purpose, (file, flag) -> why: only a flag whose meaning differs from the
#: protocol option's belongs here (none today: every --split/--benchmarks/--max-turns/--data-dir of the tree is the
#: protocol's, with per-command defaults, choices or help given to add_protocol_arguments)
HAND_WRITTEN_ALLOWED: dict[tuple[str, str], str] = {}


def _hand_written_protocol_flags() -> set[tuple[str, str]]:
    """(file, flag) of every ``add_argument("--<protocol flag>", ...)`` call outside the one home."""
    flags = {protocol_flag(name) for name in PROTOCOL_FIELDS}
    found = set()
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            text = path.read_text(encoding="utf-8")
            if rel == HOME or not any(f'"{f}"' in text or f"'{f}'" in text for f in flags):
                continue  # a file that names no protocol flag cannot add one (skips parsing most of the tree)
            for node in ast.walk(ast.parse(text, filename=rel)):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "attr", getattr(node.func, "id", None)) == "add_argument"
                ):
                    found |= {(rel, a.value) for a in node.args if isinstance(a, ast.Constant) and a.value in flags}
    return found


def test_no_module_adds_a_protocol_flag_by_hand():
    found = _hand_written_protocol_flags()
    unexpected = sorted(found - set(HAND_WRITTEN_ALLOWED))
    assert not unexpected, (
        f"{unexpected}: protocol flags written by hand; use steer_envs.cli.common."
        f"add_protocol_arguments(parser, include=..., defaults=..., overrides=...) (or "
        f"add_data_dir), or, for a flag with another meaning, list it in HAND_WRITTEN_ALLOWED "
        f"with the reason"
    )
    stale = sorted(set(HAND_WRITTEN_ALLOWED) - found)
    assert not stale, f"{stale}: allowed hand-written flags that are gone; drop them from HAND_WRITTEN_ALLOWED"


def test_the_scan_sees_a_hand_written_flag(tmp_path, monkeypatch):
    """The scan above is not vacuous: a module that writes ``--max-turns`` by hand is caught."""
    package = tmp_path / "benchmarks"
    package.mkdir()
    (package / "tool.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        'p.add_argument("--max-turns", type=int, default=10)\n'
        'p.add_argument("--max-turnsx")\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", ("benchmarks",))
    assert _hand_written_protocol_flags() == {("benchmarks/tool.py", "--max-turns")}


# -- commands that read the protocol flags back by name ------------------------------------------------------------
PLAN_ARGV = [
    "--executor",
    "sim:weak",
    "--benchmarks",
    "nq",
    "hotpotqa",
    "--split",
    "test",
    "--max-turns",
    "7",
    "--data-dir",
    "/data/here",
    "--seeds",
    "2",
    "--limit",
    "4",
]
PLAN_PROTOCOL = dict(
    executor="sim:weak", benchmarks=("nq", "hotpotqa"), split="test", max_turns=7, data_dir="/data/here"
)


def test_compare_plan_takes_the_protocol_flags(tmp_path):
    from benchmarks.cli import compare_plan

    args = build_parser().parse_args(["compare", "--out", str(tmp_path), *PLAN_ARGV])
    plan = compare_plan(args, tmp_path)
    assert {k: getattr(plan, k) for k in PLAN_PROTOCOL} == PLAN_PROTOCOL and (plan.seeds, plan.limit) == (2, 4)
    assert compare_plan(args, tmp_path, executor="sim:loopy").executor == "sim:loopy"  # the results page's executor
    args = build_parser().parse_args(["compare", "--out", str(tmp_path), "--intervention-cost", "0.1"])
    with pytest.raises(SteerEnvsError, match="drop --intervention-cost"):
        compare_plan(args, tmp_path)


def test_headroom_ladder_config_takes_the_protocol_flags(monkeypatch, tmp_path):
    import benchmarks.harness.ladder as ladder
    from benchmarks.cli import _run_headroom

    seen = {}
    monkeypatch.setattr(ladder, "run_ladder", lambda config, out, log=print: seen.update(config=config) or "")
    _run_headroom(build_parser().parse_args(["headroom", "--out", str(tmp_path), *PLAN_ARGV]))
    config = seen["config"]
    assert {k: getattr(config, k) for k in PLAN_PROTOCOL} == PLAN_PROTOCOL and (config.seeds, config.limit) == (2, 4)
    assert config == ladder.LadderConfig(seeds=2, limit=4, **PLAN_PROTOCOL)
