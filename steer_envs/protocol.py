"""The env protocol a run shares, and the one env factory.

Why one protocol: an evaluation run (``benchmarks.harness.EvalConfig``), the methods it builds
(``baselines.registry.MethodContext``) and a steering training run (``agents.steering.SteeringConfig``) all make
envs with the same executor, tasks, turn budget, metric and intervention cost. :class:`EnvProtocol` holds those
fields once; the three configs hold one (``.env_protocol``) instead of copies, and :func:`make_env` turns it (plus
per-call options such as ``action_mode``) into ``gymnasium.make`` keywords. The options themselves, with their
docs, are :class:`steer_envs.envs.base.EnvConfig`.

:func:`holds_protocol` keeps the holders' constructors as they were: ``EvalConfig(executor=..., split=...)``
still works, and so does reading ``config.executor``.
"""
from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import SteerEnvsError


@dataclass(frozen=True)
class EnvProtocol:
    """What every env of one run shares (a subset of :class:`~steer_envs.envs.base.EnvConfig`, same names)."""

    executor: str = "sim:default"
    #: None: the env's default (all seven benchmarks)
    benchmarks: tuple[str, ...] | None = None
    split: str = "train"
    max_turns: int = 10
    metric: str = "f1"
    intervention_cost: float = 0.0
    #: where the data is, not what the protocol is: left out of comparisons (and of the holders' hashes)
    data_dir: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.benchmarks, list):  # a list from a TOML/JSON file: stored as a tuple (hashable)
            object.__setattr__(self, "benchmarks", tuple(self.benchmarks))

    def env_kwargs(self) -> dict[str, Any]:
        """The protocol as ``gymnasium.make`` keywords."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


PROTOCOL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EnvProtocol))


def make_env(env_id: str, protocol: EnvProtocol | None = None, **overrides: Any):
    """``gymnasium.make(env_id, **protocol's fields, **overrides)``: the one env factory of the project.

    ``protocol`` None: the env's own defaults. ``overrides`` are any options of the env (see
    :class:`~steer_envs.envs.base.EnvConfig` and the env cards); an unknown one is an error naming the valid ones.
    """
    import gymnasium

    from .envs.registration import register_envs

    register_envs()
    if protocol is not None and not isinstance(protocol, EnvProtocol):
        raise SteerEnvsError(f"make_env's protocol must be a steer_envs.EnvProtocol (or None), got "
                             f"{type(protocol).__name__}; pass single options as keywords instead")
    kwargs = protocol.env_kwargs() if protocol is not None else {}
    kwargs.update(overrides)
    return gymnasium.make(env_id, **kwargs)


def holds_protocol(cls: type | None = None, *, attribute: str = "env_protocol",
                   names: Mapping[str, str] | None = None, keywords: tuple[str, ...] | None = None):
    """Class decorator for a dataclass with a field ``attribute: EnvProtocol``.

    Its constructor (and :func:`dataclasses.replace`) also takes the protocol's fields as keywords, which update
    the protocol given (or the field's default); the fields read (and, unless the dataclass is frozen, write)
    as attributes. ``names`` maps a holder's own name to the protocol's (``{"cost": "intervention_cost"}``);
    ``keywords`` limits which protocol fields the holder exposes (default: all). ``cls.protocol_keywords`` lists
    the exposed names, for config loaders."""

    def wrap(cls: type) -> type:
        renames = dict(names or {})
        reverse = {v: k for k, v in renames.items()}
        exposed = tuple(keywords) if keywords is not None else tuple(reverse.get(n, n) for n in PROTOCOL_FIELDS)
        for name in exposed:
            if renames.get(name, name) not in PROTOCOL_FIELDS:
                raise TypeError(f"{cls.__name__}: {name!r} is no EnvProtocol field")
        holder = next((f for f in fields(cls) if f.name == attribute), None)
        if holder is None:
            raise TypeError(f"{cls.__name__} has no dataclass field {attribute!r}")
        frozen = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        dataclass_init = cls.__init__

        def default_protocol() -> EnvProtocol:
            if holder.default is not dataclasses.MISSING:
                return holder.default
            return holder.default_factory()  # type: ignore[misc]

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            flat = {renames.get(k, k): kwargs.pop(k) for k in list(kwargs) if k in exposed}
            if flat:
                base = kwargs.pop(attribute, None) or default_protocol()
                kwargs[attribute] = dataclasses.replace(base, **flat)
            dataclass_init(self, *args, **kwargs)

        __init__.__doc__ = dataclass_init.__doc__
        __init__.__wrapped__ = dataclass_init  # type: ignore[attr-defined]
        cls.__init__ = __init__

        for name in exposed:
            target = renames.get(name, name)

            def getter(self, _target=target):
                return getattr(getattr(self, attribute), _target)

            setter = None
            if not frozen:
                def setter(self, value, _target=target):
                    object.__setattr__(self, attribute, dataclasses.replace(getattr(self, attribute), **{_target: value}))

            setattr(cls, name, property(getter, setter, doc=f"``{attribute}.{target}`` (the shared env protocol)"))
        cls.protocol_keywords = exposed
        return cls

    return wrap if cls is None else wrap(cls)


def flat_dict(holder: Any, attribute: str = "env_protocol") -> dict[str, Any]:
    """:func:`dataclasses.asdict` of ``holder`` with the protocol's exposed fields in place of ``attribute``: the
    shape the holder had before it held a protocol (what its config files and fingerprints contain)."""
    data = {f.name: _as_plain(getattr(holder, f.name)) for f in fields(holder) if f.name != attribute}
    for name in getattr(type(holder), "protocol_keywords", ()):
        data[name] = _as_plain(getattr(holder, name))
    return data


def _as_plain(value: Any) -> Any:
    """One value as :func:`dataclasses.asdict` gives it (nested dataclasses as dicts, containers copied)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return copy.deepcopy(value)


__all__ = ["EnvProtocol", "PROTOCOL_FIELDS", "flat_dict", "holds_protocol", "make_env"]
