"""The method registry: a lookup imports no torch, one registry type, plugins add methods."""

from __future__ import annotations

import subprocess
import sys

import pytest

LOOKUP_WITHOUT_TORCH = """
import sys
from baselines.registry import build_policy, get_method, parse_method, MethodContext
method = get_method("no_supervision")
assert parse_method("drift_rule:turns=4").label == "drift_rule:turns=4"
policy = method.builder()
loaded = sorted(m for m in ("torch", "transformers", "agents.steering.agent") if m in sys.modules)
print("LOADED", loaded)
"""


def test_looking_up_a_method_imports_no_torch():
    out = subprocess.run([sys.executable, "-c", LOOKUP_WITHOUT_TORCH], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout, out.stdout


def test_the_rl_methods_options_default_to_the_trainer_defaults():
    from agents.steering.config import SteeringConfig
    from baselines.registry import get_method

    rl = get_method("steering_rl").defaults()
    defaults = SteeringConfig()
    assert (rl.m, rl.k, rl.N, rl.lr, rl.tau) == (defaults.m, defaults.k, defaults.N, defaults.lr, 0.5)
    planning = get_method("planning_rl").defaults()
    assert (planning.m, planning.k, planning.N, planning.lr) == (16, 64, 8, defaults.lr)


def test_the_registry_is_a_lazy_registry_listing_every_builtin_in_table_order():
    from baselines.methods import BUILTIN_METHODS
    from baselines.registry import METHODS, known_methods
    from steer_envs.registry import LazyRegistry

    assert isinstance(METHODS, LazyRegistry)
    names = [m.name for m in known_methods()]
    assert names[: len(BUILTIN_METHODS)] == list(BUILTIN_METHODS)
    assert names[0] == "no_supervision" and "handoff_rl" in names


def test_unknown_method_names_the_valid_ones():
    from baselines.registry import get_method
    from steer_envs.errors import SteerEnvsError

    with pytest.raises(SteerEnvsError, match="no_supervision"):
        get_method("no_supervison")


def test_the_removed_names_are_gone():
    import importlib

    from baselines import base, registry, steering
    from steer_envs.errors import SteerEnvsError

    assert registry.MethodContext is base.MethodContext and registry.Method is base.Method
    assert not hasattr(steering, "_rl") and not hasattr(steering, "_untrained")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("baselines.catalog")
    with pytest.raises(SteerEnvsError, match="steering_zero_shot"):
        registry.get_method("steering_llm_zero_shot")


def test_handoff_uses_the_public_builders():
    import ast
    from pathlib import Path

    import baselines.handoff as handoff

    tree = ast.parse(Path(handoff.__file__).read_text(encoding="utf-8"))
    private = [
        f"{node.module}:{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert private == []


def _two_plugin_methods():
    """A plugin entry point's object: a function returning several methods (used below through a real EntryPoint)."""
    from baselines.registry import STEERING_ENV, Method

    return [
        Method("plugin_a", "a", STEERING_ENV, "baselines.simple:build_no_supervision"),
        Method("no_supervision", "tries to replace a built-in", STEERING_ENV, "baselines.simple:build_random"),
    ]


_NOT_METHODS = ["no_supervision"]


def test_a_plugin_entry_point_adds_its_methods_and_replaces_no_builtin(monkeypatch):
    from importlib import metadata

    import steer_envs.registry as core
    from baselines import registry
    from steer_envs.registry import LazyRegistry

    entry = metadata.EntryPoint("two", f"{__name__}:_two_plugin_methods", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(core, "entry_points", lambda group: [entry] if group == registry.ENTRY_POINT_GROUP else [])
    fresh = LazyRegistry(
        "method", entry_point_group=registry.ENTRY_POINT_GROUP, expand_entry_point=registry._plugin_methods
    )
    fresh.register("no_supervision", registry.get_method("no_supervision"))
    assert list(fresh) == ["no_supervision", "plugin_a"]
    assert fresh.resolve("no_supervision").build == "baselines.simple:build_no_supervision"
    bad = metadata.EntryPoint("bad", f"{__name__}:_NOT_METHODS", registry.ENTRY_POINT_GROUP)
    with pytest.raises(Exception, match="not a baselines.registry.Method"):
        list(registry._plugin_methods(bad))


def test_one_entry_point_reader():
    """Every plugin group is read through steer_envs.registry.entry_points (executors, retrievers, commands,
    methods): no second loader."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    callers = sorted(
        str(p.relative_to(root))
        for package in ("steer_envs", "agents", "baselines", "benchmarks")
        for p in (root / package).rglob("*.py")
        if "entry_points(group=" in p.read_text(encoding="utf-8")
    )
    assert callers == ["steer_envs/registry.py"]
