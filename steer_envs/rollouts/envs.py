"""Setups for :class:`~steer_envs.rollouts.base.Job`: build a Gymnasium env replica in each worker, or hand over
an object the caller already holds (the local pool only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _frozen(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


@dataclass(frozen=True)
class EnvFactory:
    """``gymnasium.make(env_id, **kwargs)`` in the worker (ids of ``steer_envs`` are registered first), optionally
    with a ``companion`` travelling along (e.g. a policy for evaluation episodes): the worker's state is then
    ``(env, companion)``. Build with :meth:`of` so keyword values become hashable."""

    env_id: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    companion: Any = None  # compared (and hashed) by identity for plain objects: another policy, another setup

    @classmethod
    def of(cls, env_id: str, companion: Any = None, **kwargs: Any) -> EnvFactory:
        return cls(env_id, _frozen(kwargs), companion)

    def make_kwargs(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.kwargs}

    def __call__(self) -> Any:
        import gymnasium

        import steer_envs  # noqa: F401  (registers the ids in a fresh worker)

        env = gymnasium.make(self.env_id, **self.make_kwargs())
        return env if self.companion is None else (env, self.companion)


@dataclass(frozen=True, eq=False)
class GivenState:
    """A setup that returns an object already built here (an env, an env and a policy): for the local pool, whose
    items then run on the caller's own objects exactly as the loop did before the pool existed. Two of them are
    equal when they hand over the very same object (so repeated calls reuse one cache entry)."""

    value: Any

    def __call__(self) -> Any:
        return self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GivenState) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def replica_factory(env: Any) -> EnvFactory:
    """How a worker rebuilds ``env``: the id and keyword arguments ``gymnasium.make`` recorded in ``env.spec``."""
    from ..errors import SteerEnvsError

    spec = getattr(env, "spec", None) or getattr(getattr(env, "unwrapped", None), "spec", None)
    if spec is None or not getattr(spec, "id", None):
        raise SteerEnvsError(
            "a pool with worker processes rebuilds the env from its gymnasium spec; create the env "
            "with gymnasium.make(...) (or use the local pool)"
        )
    return EnvFactory.of(spec.id, **dict(spec.kwargs or {}))


def env_setup(env: Any, pool: Any) -> Any:
    """The setup of a job over ``env``: the env itself in the local pool, a replica built from its spec elsewhere."""
    return GivenState(env) if getattr(pool, "kind", "local") == "local" else replica_factory(env)
