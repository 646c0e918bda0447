"""The rollout pool that trainers, filtered BC and the evaluation harness share: ``local``, ``processes``, ``ray``.

>>> from steer_envs.rollouts import EnvFactory, Job, PoolConfig, make_pool
>>> with make_pool(PoolConfig("processes", workers=2)) as pool:          # doctest: +SKIP
...     returns = pool.map(Job(EnvFactory.of(ENV_ID, executor="sim:default"), my_rollout), items)

``my_rollout(env, item)`` is a module-level function; each item carries what its result depends on (an env
snapshot from ``get_state``, actions, seeds), so the results are those of the local loop, in item order, for
any number of workers. See :mod:`steer_envs.rollouts.base` for the contract. ``threads`` runs items on threads
of this process (each with its own replica): :func:`concurrent_pool` chooses it in place of an ``auto`` pool (the
command line's default) for an I/O-bound executor (``openai:``), which is how ``steer-envs eval``, ``compare``
and ``train`` keep many LLM episodes and counterfactual continuations in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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


def _greenlets(config: PoolConfig) -> RolloutPool:
    from .greenlets import GreenletPool

    return GreenletPool(config)


def _threads(config: PoolConfig) -> RolloutPool:
    from .threads import ThreadPool

    return ThreadPool(config)


register_pool("local", LocalPool)
register_pool("auto", LocalPool)  # serial here; concurrent_pool swaps it where the executor waits on a server
register_pool("greenlets", _greenlets)
register_pool("processes", _processes)
register_pool("ray", _ray)
register_pool("threads", _threads)


def make_pool(config: PoolConfig | RolloutPool | None = None) -> RolloutPool:
    """A pool for ``config`` (None: local); an existing pool is returned as it is."""
    if isinstance(config, RolloutPool):
        return config
    config = config or PoolConfig()
    return POOLS[config.kind](config)


def executor_of(env: Any) -> str | None:
    """The executor spec ``env`` was built with (None for an env without one)."""
    spec = getattr(env, "spec", None) or getattr(getattr(env, "unwrapped", None), "spec", None)
    if spec is not None and "executor" in (spec.kwargs or {}):
        return spec.kwargs["executor"]
    config = getattr(getattr(env, "unwrapped", env), "config", None)
    return getattr(config, "executor", None)


def in_flight_of(executor: str | None) -> int | None:
    """How many requests the model backend of executor spec ``executor`` keeps in flight at once (``openai:``:
    ``OpenAIOptions.max_in_flight``, 64 unless the spec says ``?max_in_flight=N``); None when the executor names
    no such bound (no executor, a backend in this process, a plugin's kind, a spec that does not parse)."""
    if not executor:
        return None
    from ..llm.registry import BACKENDS, in_flight_bound, split_spec_options

    target, options = split_spec_options(executor)
    if target.partition(":")[0] not in BACKENDS:
        return None
    try:
        return in_flight_bound(target, **options)
    except Exception:  # noqa: BLE001 - the env that uses the spec gives the clear error
        return None


def concurrent_pool(
    spec: PoolConfig | RolloutPool | None, executor: str | None, threads: int | None = None
) -> PoolConfig | RolloutPool | None:
    """``spec``, except that an ``auto`` pool (the command line's default: a ``PoolConfig("auto")`` or the pool
    made from one) becomes a ``greenlets`` pool when ``executor`` is I/O-bound and its waits yield (``openai:``:
    its episodes wait on a model server, so many run at once on this thread), or a ``threads`` pool when its
    waits block (a plugin kind that says so). Other executors keep the serial path, so their results stay those
    of the local loop by construction; any other pool (None and ``local`` included: one episode at a time, in
    order, as a test against a dying server needs) is kept as it is.

    Either keeps as many episodes in flight as the backend lets requests reach the server (:func:`in_flight_of`;
    ``threads`` overrides it): 64 for ``openai:`` unless the spec's ``?max_in_flight=N`` says otherwise."""
    from ..executors.registry import is_io_bound, waits_cooperatively

    config = spec if isinstance(spec, PoolConfig) else getattr(spec, "config", None)
    if getattr(config, "kind", None) != "auto" or not is_io_bound(executor):
        return spec
    from .threads import FALLBACK_THREADS

    kind = "greenlets" if waits_cooperatively(executor) else "threads"
    return PoolConfig(kind, workers=threads or in_flight_of(executor) or FALLBACK_THREADS)


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
    "EnvFactory",
    "GivenState",
    "Job",
    "KILL_ONCE_ENV",
    "LocalPool",
    "POOL_KINDS",
    "PoolConfig",
    "PoolError",
    "RolloutPool",
    "add_pool_arguments",
    "concurrent_pool",
    "env_setup",
    "executor_of",
    "in_flight_of",
    "replica_factory",
    "make_pool",
    "pool_config_from_args",
    "register_pool",
    "using_pool",
]
