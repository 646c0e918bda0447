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

The registry is a :class:`steer_envs.registry.LazyRegistry` (the one the executors and retrievers use), filled
from :mod:`baselines.methods`. Looking a method up imports neither its builder nor torch: a builder is an import
path, imported when the method is built, and the records that need torch to describe their options (the RL
methods, whose defaults are SteeringConfig's) are built on their own first lookup. ``Method``, ``MethodContext``
and the env ids live in :mod:`baselines.base` and are re-exported here.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata

from steer_envs.errors import SteerEnvsError, unknown_name
from steer_envs.registry import LazyRegistry

from .base import (  # noqa: F401  (re-exported: their home was this module)
    HANDOFF_ENV,
    PLANNING_ENV,
    STEERING_ENV,
    VERIFICATION_ENV,
    Method,
    MethodContext,
    PolicyBuilder,
)
from .methods import BUILTIN_METHODS

ENTRY_POINT_GROUP = "steer_envs.methods"


def _plugin_methods(entry: metadata.EntryPoint) -> Iterable[tuple[str, Method]]:
    """An entry point of ``steer_envs.methods`` names a Method or a function returning one or several."""
    found = entry.load()
    if callable(found) and not isinstance(found, Method):
        found = found()
    for method in ([found] if isinstance(found, Method) else list(found)):
        if not isinstance(method, Method):
            raise SteerEnvsError(f"entry point {entry.name!r} = {entry.value!r} of group {ENTRY_POINT_GROUP!r} "
                                 f"gave {type(method).__name__}, not a baselines.registry.Method")
        yield method.name, method


#: ``name -> Method`` (or a function building it on first lookup); built-in names are never replaced by plugins
METHODS: LazyRegistry[Method | Callable[[], Method]] = LazyRegistry(
    "method", "`steer-envs eval --list-methods` describes each", entry_point_group=ENTRY_POINT_GROUP,
    expand_entry_point=_plugin_methods)
for _name, _entry in BUILTIN_METHODS.items():
    METHODS.register(_name, _entry)


def register_method(method: Method) -> Method:
    METHODS.register(method.name, method)
    return method


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise unknown_name("method", name, list(METHODS), hint="`steer-envs eval --list-methods` describes each")
    found = METHODS.resolve(name)
    if not isinstance(found, Method):  # a record built on first lookup (baselines.methods)
        found = found()
        METHODS.register(name, found)
    return found


def known_methods() -> list[Method]:
    return [get_method(name) for name in METHODS]


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
