"""The ``ray`` pool: one Ray actor per worker, each holding its own env replicas (and so its own retriever).

Ray is the engine here, not something this project re-implements: actors are created with ``max_restarts`` and
``max_task_retries``, so an actor whose process dies is restarted by Ray and its unfinished items are run again
on the fresh actor. With ``ray_address`` the pool joins an existing cluster (``ray.init(address=...)``); without
it, it starts a local Ray with one CPU per worker and shuts it down on :meth:`close`. Items are dispatched two at
a time per actor (one running, one queued) and collected with ``ray.wait``, so results arrive as they finish and
:meth:`RolloutPool.map` puts them back in item order.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import SteerEnvsError
from ..meter import add_env_steps, env_steps
from .base import (
    Job,
    PoolConfig,
    PoolError,
    RolloutPool,
    WorkerCache,
    job_bytes,
    limit_threads_in_worker,
    maybe_kill_for_test,
)

IN_FLIGHT_PER_ACTOR = 2
#: how long the actors may take to be placed and started before the pool says why it cannot run
ACTOR_START_TIMEOUT_S = 180.0
#: environment variables that travel to the actors (data folder, caches, test fault injection)
_FORWARDED_PREFIXES = ("STEER_ENVS_",)


#: the local Ray this pool starts runs its workers at normal priority. Why: Ray starts workers at niceness 15, and
#: its workers do all of the pool's work; beside any other busy process on the machine they get a sliver of the CPU
#: and the run slows several-fold
LOCAL_RAY_SYSTEM_CONFIG = {"worker_niceness": 0}


class RolloutActor:
    """The actor body (wrapped by ``ray.remote`` in :class:`RayPool`)."""

    def __init__(self) -> None:
        limit_threads_in_worker()
        self.cache = WorkerCache()

    def pid(self) -> int:
        return os.getpid()

    def run(self, key: str, job: Job, position: int, item: Any) -> tuple[int, Any, int]:
        """``(position, result, env steps the item took)``: the steps go to the driver's meter."""
        maybe_kill_for_test()
        before = env_steps()
        result = job.run(self.cache.state(key, job), item)
        return position, result, env_steps() - before


def _import_ray():
    try:
        import ray
    except ImportError:
        raise SteerEnvsError("the ray pool needs Ray: pip install 'steer-envs[ray]'") from None
    return ray


def actor_env_vars(local_cluster: bool) -> dict[str, str]:
    """What the actors need from this process's environment. ``PYTHONPATH`` only on a cluster this process started
    (a remote cluster's nodes have their own install)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_FORWARDED_PREFIXES)}
    if local_cluster and os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.setdefault("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE", "disabled"))
    return env


class RayPool(RolloutPool):
    kind = "ray"

    def __init__(self, config: PoolConfig) -> None:
        super().__init__(config)
        self._ray = _import_ray()
        self._started_ray = False
        self._actors: list[Any] = []
        self._local = not config.ray_address

    def _init_ray(self) -> None:
        ray = self._ray
        if ray.is_initialized():
            return
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        if self.config.ray_address:
            kwargs["address"] = self.config.ray_address
        else:
            kwargs["num_cpus"] = max(1, self.config.workers or os.cpu_count() or 1)
            kwargs["_system_config"] = LOCAL_RAY_SYSTEM_CONFIG
        if self.config.ray_temp_dir:
            kwargs["_temp_dir"] = str(self.config.ray_temp_dir)
        try:
            ray.init(**kwargs)
        except Exception as exc:  # noqa: BLE001 - a wrong address must say so, not dump Ray's traceback
            where = self.config.ray_address or "a local Ray"
            raise SteerEnvsError(
                f"cannot start or reach {where} ({type(exc).__name__}: {exc}); check --ray-address "
                "(e.g. ray://HEAD:10001 or HEAD:6379) and that the cluster runs the same Ray version"
            ) from exc
        self._started_ray = True

    @property
    def workers(self) -> int:
        if self.config.workers:
            return self.config.workers
        self._init_ray()
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def _ensure_actors(self) -> None:
        self._init_ray()
        if self._actors:
            return
        remote = self._ray.remote(
            num_cpus=self.config.cpus_per_worker, max_restarts=-1, max_task_retries=self.config.max_item_retries
        )(RolloutActor)
        runtime_env = {"env_vars": actor_env_vars(self._local)}
        self._actors = [remote.options(runtime_env=runtime_env).remote() for _ in range(self.workers)]
        ready, _ = self._ray.wait(
            [a.pid.remote() for a in self._actors], num_returns=len(self._actors), timeout=ACTOR_START_TIMEOUT_S
        )
        if len(ready) < len(self._actors):
            free = self._ray.available_resources().get("CPU", 0)
            self.close()
            raise PoolError(
                f"Ray placed {len(ready)} of {self.workers} rollout actors ({self.config.cpus_per_worker:g} "
                "CPU each) within "
                f"{ACTOR_START_TIMEOUT_S:.0f} s; the cluster has {free:g} CPU(s) free. Ask for fewer "
                "--workers, or free the CPUs other actors hold"
            )

    def actor_pids(self) -> list[int]:
        self._ensure_actors()
        return self._ray.get([a.pid.remote() for a in self._actors])

    def _unordered(self, job: Job, items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        if not items:
            return
        ray = self._ray
        key, _ = job_bytes(job)
        self._ensure_actors()
        job_ref = ray.put(job)
        todo = deque(enumerate(items))
        load = {i: 0 for i in range(len(self._actors))}
        owner: dict[Any, int] = {}

        def submit() -> None:
            for index, actor in enumerate(self._actors):
                while todo and load[index] < IN_FLIGHT_PER_ACTOR:
                    position, item = todo.popleft()
                    owner[actor.run.remote(key, job_ref, position, item)] = index
                    load[index] += 1

        submit()
        while owner:
            done, _ = ray.wait(list(owner), num_returns=1)
            for ref in done:
                load[owner.pop(ref)] -= 1
                try:
                    position, result, steps = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    raise PoolError(f"an item failed in a Ray actor:\n{exc}") from None
                except ray.exceptions.RayActorError as exc:
                    raise PoolError(
                        f"a Ray actor died more than {self.config.max_item_retries} times on one item: {exc}"
                    ) from None
                add_env_steps(steps)
                yield position, result
            submit()

    def close(self) -> None:
        for actor in self._actors:
            try:
                self._ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._actors = []
        if self._started_ray and self._ray.is_initialized():
            self._ray.shutdown()
        self._started_ray = False
