"""The method registry: every method the harness can evaluate, by name, with its documented options.

A *method* is a recipe that builds a :class:`agents.base.Policy` for one environment id (steering methods act
in SearchSteering-v0, planning in SearchPlanning-v0, verification in SearchVerification-v0). Methods that learn
(RL-trained steerers, filtered BC, SB3 PPO) train inside ``build`` on the *train* split and keep their
checkpoint in ``context.workdir``, so a resumed evaluation reuses it instead of training again.

Method specs on the command line read ``name`` or ``name:key=value,key=value`` (e.g. ``random:p=0.1``,
``steering_rl:tau=0.3``); the canonical spec (options sorted) is the row label in tables.

Installed packages add methods through the ``steer_envs.methods`` entry-point group: each entry point names a
:class:`Method` (or a function returning one or several), loaded the first time methods are looked up in a
process, so ``steer-envs eval --method <theirs>`` works without importing the package first.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steer_envs.errors import SteerEnvsError, unknown_name

STEERING_ENV = "steer_envs/SearchSteering-v0"
PLANNING_ENV = "steer_envs/SearchPlanning-v0"
VERIFICATION_ENV = "steer_envs/SearchVerification-v0"


@dataclass
class MethodContext:
    """Everything a method needs to build (and, if it learns, train) its policy."""

    executor: str = "sim:default"
    benchmarks: tuple[str, ...] | None = None
    max_turns: int = 10
    metric: str = "f1"
    intervention_cost: float = 0.0
    data_dir: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    #: where a learning method keeps its checkpoint (reused when present); ``None``: a temporary folder
    workdir: Path | None = None
    #: JSONL file for training curves (one object per logged step)
    training_log: Path | None = None
    #: interventions per decision measured for another method of the same run (``random:match=LABEL``)
    measured_rate: Callable[[str], float | None] = lambda label: None
    progress: bool = True
    seed: int = 0
    #: where a method's expensive rollouts run (a PoolConfig or RolloutPool; None = this process)
    pool: Any = None

    def make_env(self, env_id: str = STEERING_ENV, split: str = "train", action_mode: str = "discrete", **overrides: Any):
        """Build an env of this context's protocol (the executor, turn budget and metric of the run)."""
        import gymnasium

        import steer_envs  # noqa: F401  (registers the ids)

        kwargs: dict[str, Any] = dict(
            executor=self.executor, benchmarks=list(self.benchmarks) if self.benchmarks else None, split=split,
            max_turns=self.max_turns, action_mode=action_mode, intervention_cost=self.intervention_cost,
            metric=self.metric, data_dir=self.data_dir,
        )
        kwargs.update(overrides)
        return gymnasium.make(env_id, **kwargs)

    def option(self, key: str, default: Any, kind: Callable[[str], Any] = str) -> Any:
        if key not in self.options:
            return default
        try:
            return kind(self.options[key])
        except ValueError:
            raise SteerEnvsError(f"option {key}={self.options[key]!r} is not a valid {kind.__name__}") from None

    def checkpoint_dir(self) -> Path:
        if self.workdir is None:
            import tempfile

            self.workdir = Path(tempfile.mkdtemp(prefix="steer_envs_method_"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.workdir


PolicyBuilder = Callable[[MethodContext], Any]


@dataclass(frozen=True)
class Method:
    """A registered method. ``options`` documents the accepted keys and their defaults (as strings)."""

    name: str
    help: str
    env_id: str
    build: PolicyBuilder | str
    options: dict[str, str] = field(default_factory=dict)
    learns: bool = False
    action_mode: str = "discrete"
    #: a family name used to group rows in reports (reference, rule, steering, planning, ...)
    group: str = "steering"
    #: options that only change deployment (e.g. the gate threshold tau), not what is trained: methods that
    #: differ only in these share one checkpoint (a tau sweep trains once)
    deploy_options: frozenset[str] = frozenset({"tau"})
    #: the option that sets how often the method intervenes, for rate-matched comparisons (chosen on dev by the
    #: harness, :mod:`benchmarks.harness.operating`): ``tau`` (a deployment threshold), ``p`` (a probability per
    #: decision), ``cost`` (a training-time cost per intervention: each value is a training run); None: no knob
    rate_knob: str | None = None

    def builder(self) -> PolicyBuilder:
        if isinstance(self.build, str):
            module, _, attr = self.build.partition(":")
            return getattr(importlib.import_module(module), attr)
        return self.build


METHODS: dict[str, Method] = {}


def register_method(method: Method) -> Method:
    METHODS[method.name] = method
    return method


def get_method(name: str) -> Method:
    _load_builtin()
    if name not in METHODS:
        raise unknown_name("method", name, list(METHODS), hint="`steer-envs eval --list-methods` describes each")
    return METHODS[name]


def known_methods() -> list[Method]:
    _load_builtin()
    return list(METHODS.values())


@dataclass(frozen=True)
class MethodSpec:
    """A parsed ``name:key=value,...`` spec; ``label`` is canonical (sorted options)."""

    name: str
    options: dict[str, str]

    @property
    def label(self) -> str:
        if not self.options:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))

    @property
    def training_label(self) -> str:
        """The label without deployment-only options: the key of the method's checkpoint."""
        method = get_method(self.name)
        kept = {k: v for k, v in self.options.items() if k not in method.deploy_options}
        return MethodSpec(self.name, kept).label


def parse_method(spec: str) -> MethodSpec:
    """Parse and validate a method spec against the registry (unknown names/options list the valid ones)."""
    name, _, rest = spec.strip().partition(":")
    method = get_method(name)
    options: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise SteerEnvsError(f"method option {part!r} in {spec!r} must look like key=value")
        if key not in method.options:
            valid = ", ".join(f"{k} (default {v})" for k, v in method.options.items()) or "none"
            raise SteerEnvsError(f"method {name!r} has no option {key!r}; its options: {valid}")
        options[key] = value
    return MethodSpec(name, options)


def build_policy(spec: str | MethodSpec, context: MethodContext):
    """Build the policy of a method spec in ``context`` (trains learning methods, or loads their checkpoint)."""
    parsed = parse_method(spec) if isinstance(spec, str) else spec
    method = get_method(parsed.name)
    context.options = {**method.options, **parsed.options}
    return method.builder()(context)


_LOADED = False
ENTRY_POINT_GROUP = "steer_envs.methods"


def _load_builtin() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        importlib.import_module("baselines.catalog")
        _load_plugins()


def _load_plugins() -> None:
    from importlib import metadata

    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found = entry.load()
        if callable(found) and not isinstance(found, Method):
            found = found()
        for method in ([found] if isinstance(found, Method) else list(found)):
            if not isinstance(method, Method):
                raise SteerEnvsError(f"entry point {entry.name!r} = {entry.value!r} of group {ENTRY_POINT_GROUP!r} "
                                     f"gave {type(method).__name__}, not a baselines.registry.Method")
            METHODS.setdefault(method.name, method)  # built-in names are never replaced
