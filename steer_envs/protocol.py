"""The env protocol a run shares, and the one env factory.

Why one protocol: an evaluation run (``benchmarks.harness.EvalConfig``), the methods it builds
(``baselines.registry.MethodContext``) and a steering training run (``agents.steering.SteeringConfig``) all make
envs with the same executor, tasks, turn budget, metric and intervention cost. :class:`EnvProtocol` declares those
fields once; the three configs are dataclasses that extend it (``EvalConfig(executor=..., split=...)``,
``config.executor``: plain fields, visible to type checkers), and :func:`make_env` turns one (plus per-call options
such as ``action_mode``) into ``gymnasium.make`` keywords. The options themselves, with their docs, are
:class:`steer_envs.envs.base.EnvConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .errors import SteerEnvsError


@dataclass(kw_only=True)
class EnvProtocol:
    """What every env of one run shares (a subset of :class:`~steer_envs.envs.base.EnvConfig`, same names).

    A config that makes envs extends this class (its own fields after these; a subclass may redeclare a field to
    change its default) and calls ``super().__post_init__()`` from its own ``__post_init__``."""

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
        if isinstance(self.benchmarks, list):  # a list from a TOML/JSON file: stored as a tuple
            self.benchmarks = tuple(self.benchmarks)

    def env_kwargs(self) -> dict[str, Any]:
        """The protocol's fields (not a subclass's own) as ``gymnasium.make`` keywords."""
        return {name: getattr(self, name) for name in PROTOCOL_FIELDS}

    @property
    def env_protocol(self) -> EnvProtocol:
        """The protocol alone, without a subclass's own fields (what two runs compare)."""
        return EnvProtocol(**self.env_kwargs())


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
        raise SteerEnvsError(
            f"make_env's protocol must be a steer_envs.EnvProtocol (or None), got "
            f"{type(protocol).__name__}; pass single options as keywords instead"
        )
    kwargs = protocol.env_kwargs() if protocol is not None else {}
    kwargs.update(overrides)
    return gymnasium.make(env_id, **kwargs)


__all__ = ["EnvProtocol", "PROTOCOL_FIELDS", "make_env"]
