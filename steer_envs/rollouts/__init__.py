"""The rollout pool that trainers, filtered BC and the evaluation harness share: ``local``, ``processes``, ``ray``.

>>> from steer_envs.rollouts import EnvFactory, Job, PoolConfig, make_pool
>>> with make_pool(PoolConfig("processes", workers=2)) as pool:          # doctest: +SKIP
...     returns = pool.map(Job(EnvFactory.of(ENV_ID, executor="sim:default"), my_rollout), items)

``my_rollout(env, item)`` is a module-level function; each item carries what its result depends on (an env
snapshot from ``get_state``, actions, seeds), so the results are those of the local loop, in item order, for
any number of workers. See :mod:`steer_envs.rollouts.base` for the contract.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .base import KILL_ONCE_ENV, POOL_KINDS, Job, PoolConfig, PoolError, RolloutPool
from .envs import EnvFactory, GivenState, env_setup, replica_factory
from .local import LocalPool
from .options import add_pool_arguments, pool_config_from_args

POOLS: dict[str, Callable[[PoolConfig], RolloutPool]] = {}


def register_pool(kind: str, factory: Callable[[PoolConfig], RolloutPool]) -> None:
    POOLS[kind] = factory


def _processes(config: PoolConfig) -> RolloutPool:
    from .processes import ProcessPool

    return ProcessPool(config)


def _ray(config: PoolConfig) -> RolloutPool:
    from .ray_pool import RayPool

    return RayPool(config)


register_pool("local", LocalPool)
register_pool("processes", _processes)
register_pool("ray", _ray)


def make_pool(config: PoolConfig | RolloutPool | None = None) -> RolloutPool:
    """A pool for ``config`` (None: local); an existing pool is returned as it is."""
    if isinstance(config, RolloutPool):
        return config
    config = config or PoolConfig()
    return POOLS[config.kind](config)


@contextmanager
def using_pool(spec: PoolConfig | RolloutPool | None = None) -> Iterator[RolloutPool]:
    """The pool ``spec`` names for the block: a pool handed in stays open (its owner closes it), one made here from a
    config (or None: local) is closed at the end."""
    pool = make_pool(spec)
    try:
        yield pool
    finally:
        if pool is not spec:
            pool.close()


__all__ = [
    "EnvFactory", "GivenState", "Job", "KILL_ONCE_ENV", "LocalPool", "POOL_KINDS", "PoolConfig", "PoolError",
    "RolloutPool", "add_pool_arguments", "env_setup", "replica_factory", "make_pool", "pool_config_from_args", "register_pool", "using_pool",
]
