"""The method registry: every method the harness can evaluate, by name, with its typed, documented options.

A *method* is a recipe that builds a :class:`agents.base.Policy` for one environment id (steering methods act
in SearchSteering-v0, planning in SearchPlanning-v0, verification in SearchVerification-v0). Methods that learn
(RL-trained steerers, filtered BC, SB3 PPO) train inside ``build`` on the *train* split and keep their
checkpoint in ``context.workdir``, so a resumed evaluation reuses it instead of training again.

Method specs on the command line read ``name`` or ``name:key=value,key=value`` (e.g. ``random:p=0.1``,
``steering_rl:tau=0.3``); the canonical spec (options sorted, as written) is the row label in tables. Each method's
options are a frozen dataclass (:mod:`baselines.options`): :func:`parse_method` checks a spec against it (names,
types, ranges) before any work, and the builder reads typed attributes (``context.options_of(RandomOptions).p``).

Installed packages add methods through the ``steer_envs.methods`` entry-point group: each entry point names a
:class:`Method` (or a function returning one or several), loaded the first time methods are looked up in a
process, so ``steer-envs eval --method <theirs>`` works without importing the package first.

The registry is a :class:`steer_envs.registry.LazyRegistry` (the one the executors and retrievers use), filled
from :mod:`baselines.methods`. Looking a method up imports neither its builder nor torch: a builder and an options
class are import paths, imported when a spec of the method is parsed or built (the RL methods' options carry
SteeringConfig's defaults, whose module imports torch). ``Method``, ``MethodContext`` and the env ids live in
:mod:`baselines.base` and are re-exported here.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
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
from .options import MethodOptionError, MethodOptions

ENTRY_POINT_GROUP = "steer_envs.methods"


def _plugin_methods(entry: metadata.EntryPoint) -> Iterable[tuple[str, Method]]:
    """An entry point of ``steer_envs.methods`` names a Method or a function returning one or several."""
    found = entry.load()
    if callable(found) and not isinstance(found, Method):
        found = found()
    for method in [found] if isinstance(found, Method) else list(found):
        if not isinstance(method, Method):
            raise SteerEnvsError(
                f"entry point {entry.name!r} = {entry.value!r} of group {ENTRY_POINT_GROUP!r} "
                f"gave {type(method).__name__}, not a baselines.registry.Method"
            )
        yield method.name, method


#: ``name -> Method`` (records, not factories: the registry's type parameter is left open); built-in names are
#: never replaced by plugins
METHODS: LazyRegistry = LazyRegistry(
    "method",
    "`steer-envs eval --list-methods` describes each",
    entry_point_group=ENTRY_POINT_GROUP,
    expand_entry_point=_plugin_methods,
)
for _name, _entry in BUILTIN_METHODS.items():
    METHODS.register(_name, _entry)


def register_method(method: Method) -> Method:
    METHODS.register(method.name, method)
    return method


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise unknown_name("method", name, list(METHODS), hint="`steer-envs eval --list-methods` describes each")
    method: Method = METHODS.resolve(name)
    return method


def known_methods() -> list[Method]:
    return [get_method(name) for name in METHODS]


@dataclass(frozen=True)
class MethodSpec:
    """A ``name:key=value,...`` spec: ``given`` holds the option texts as written (the label's), ``options`` the
    method's typed options (every field; parsed and validated on first use, which :func:`parse_method` forces)."""

    name: str
    given: Mapping[str, str]

    @property
    def label(self) -> str:
        """The canonical spec (options sorted, values as written): the row label and checkpoint key."""
        if not self.given:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in sorted(self.given.items()))

    @cached_property
    def options(self) -> MethodOptions:
        return get_method(self.name).options_type().parse(self.name, self.given)

    @property
    def training_label(self) -> str:
        """The label without deployment-only options (:func:`baselines.options.method_option`'s ``deploy``): the key of
        the method's checkpoint."""
        deploy = type(self.options).deploy_names()
        return MethodSpec(self.name, {k: v for k, v in self.given.items() if k not in deploy}).label


def parse_method(spec: str) -> MethodSpec:
    """Parse and validate a method spec against the registry: an unknown method or option names the valid ones (with
    a did-you-mean), a value of the wrong type or out of range says what the option expects."""
    name, _, rest = spec.strip().partition(":")
    get_method(name)
    given: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise MethodOptionError(f"method option {part!r} in {spec!r} must look like key=value")
        given[key.strip()] = value.strip()
    parsed = MethodSpec(name, given)
    parsed.options  # noqa: B018  (validates now, before any work)
    return parsed


def build_policy(spec: str | MethodSpec, context: MethodContext):
    """Build the policy of a method spec in ``context`` (trains learning methods, or loads their checkpoint)."""
    parsed = parse_method(spec) if isinstance(spec, str) else spec
    context.options = parsed.options
    return get_method(parsed.name).builder()(context)


def method_help(method: Method, width: int = 110) -> str:
    """A method's help text: its name and description, then each option as ``name=default (type)`` and its doc,
    wrapped to ``width`` (what ``steer-envs eval --help`` and ``--list-methods`` show)."""
    lines = textwrap.wrap(f"{method.name}: {method.help}", width, subsequent_indent="    ")
    for name, kind, default, doc in method.options_type().describe():
        lines += textwrap.wrap(
            f"{name}={default} ({kind}): {doc}", width, initial_indent="  ", subsequent_indent="      "
        )
    return "\n".join(lines)


def methods_help() -> str:
    """Every registered method's :func:`method_help`, in table order."""
    return "\n".join(method_help(method) for method in known_methods())
