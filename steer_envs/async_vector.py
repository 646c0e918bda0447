"""EnvPool-style asynchronous vector env: ``send`` actions to some envs, ``recv`` whichever envs are ready.

Why: a vector ``step`` returns when the slowest of its N sub-envs has. With a served executor every sub-env's step
is a generation request, and generation latencies differ by an order of magnitude between requests, so a
synchronous step waits for the slowest draw of N and leaves every early env idle until then
(:class:`~steer_envs.vector.ConcurrentVectorEnv` reached 15 % of N / latency at N = 256 under lognormal latency).
EnvPool's asynchronous mode, which cleanrl's async PPO trains with, removes the barrier: ``num_envs`` envs run,
``recv()`` returns the first ``batch_size`` that finished (with their ``env_id``), the learner acts on those alone
and ``send(actions, env_ids)`` puts them back to work while the others are still waiting on their replies.

The protocol (as EnvPool's):

* ``async_reset(seed=None)`` starts every env's reset (``seed + i`` for env ``i``); ``recv()`` then returns their
  first observations, ``batch_size`` at a time (reward 0, flags false);
* ``send(actions, env_ids)`` steps those envs (an env may be sent to only when it is not in flight);
  ``recv() -> (obs, rewards, terminations, truncations, infos)`` blocks until ``batch_size`` envs are ready and
  returns them in the order they finished; ``infos["env_id"]`` says whose they are;
* autoreset is Gymnasium's ``NEXT_STEP`` mode: the step after an env's episode ended resets it (its action is
  ignored; reward 0, flags false, the new episode's first observation), so a learner never calls reset mid-run;
* ``reset()`` and ``step(actions)`` are the synchronous vector API (every env, in env order); ``step`` needs
  ``batch_size == num_envs`` and then returns what :class:`gymnasium.vector.SyncVectorEnv` returns, with
  ``infos["env_id"]`` added.

Each env's trajectory depends only on its seed and the actions sent to it, never on the order replies arrive in, so
a seeded run of a deterministic executor (``sim:``) is reproducible env by env.

Where the envs step (``engine``; one interpreter either way: one corpus and index, one model backend and its
keep-alive connections):

* ``greenlets`` (the default): each env call is a task of a :class:`~steer_envs.cooperative.Hub` on the learner's
  own thread. ``send`` runs the calls until each waits on its server (so every request is out before ``send``
  returns) and ``recv`` runs the hub until ``batch_size`` calls have finished. A served step costs no thread
  hand-over (measured side by side in ``BENCHMARKS.md``, *Episodes in flight*), and a CPU-bound executor
  (``sim:``, ``hf:``) simply steps one env after another. The pool is driven from one thread: the one that first
  sends to it (greenlets never change threads);
* ``threads``: ``max_in_flight`` threads, for a plugin executor whose waits block the thread instead of yielding
  (:func:`~steer_envs.executors.registry.waits_cooperatively` is false for its kind). :func:`make_async_pool`
  picks it for such kinds; with ``max_in_flight=None`` every env of an I/O-bound kind is in flight and a CPU-bound
  one steps one at a time.
"""

from __future__ import annotations

import functools
import queue
import threading
import types
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from .cooperative import TaskQueue
from .errors import SteerEnvsError, unknown_name
from .vector import check_num_envs, env_factory, executor_for, max_in_flight_for, per_env_seeds, threads_for

#: what one env's call gives back: (obs, reward, terminated, truncated, info)
_Result = tuple[Any, float, bool, bool, dict]


class _Engine(Protocol):
    """Where an :class:`AsyncPoolEnv`'s env calls run: ``submit`` them, ``start`` the submitted ones, ``next`` is
    the first to finish (blocking): ``(env id, result or the exception it raised)``."""

    def submit(self, i: int, call: Callable[[], _Result]) -> None: ...

    def start(self) -> None: ...

    def next(self) -> tuple[int, _Result | BaseException]: ...

    def close(self) -> None: ...


class _Threads:
    """Each call on one of ``workers`` threads; finished calls on a queue."""

    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="steer-pool")
        self._done: queue.SimpleQueue[tuple[int, _Result | BaseException]] = queue.SimpleQueue()

    def submit(self, i: int, call: Callable[[], _Result]) -> None:
        def run() -> None:
            try:
                self._done.put((i, call()))
            except BaseException as exc:  # noqa: BLE001 - handed to the recv() that collects this env
                self._done.put((i, exc))

        self._pool.submit(run)

    def start(self) -> None:
        pass  # submitted calls start on their own

    def next(self) -> tuple[int, _Result | BaseException]:
        return self._done.get()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)  # calls not started are dropped


class _Greenlets:
    """Each call a task of a hub on the driving thread, at most ``limit`` running at once (the rest queue)."""

    def __init__(self, limit: int) -> None:
        self._queue = TaskQueue(limit)  # its hub is made on first use, on the thread that drives the pool

    def submit(self, i: int, call: Callable[[], _Result]) -> None:
        self._queue.submit(i, call)

    def start(self) -> None:
        self._queue.run_ready()  # every submitted call runs until it waits: its request is out

    def next(self) -> tuple[int, _Result | BaseException]:
        i, task = self._queue.next()
        return i, task.error if task.error is not None else task.result

    def close(self) -> None:
        self._queue.close()


#: the engines an AsyncPoolEnv can step its envs on (by name; see the module docstring)
ENGINES: dict[str, Callable[[int], _Engine]] = {"greenlets": _Greenlets, "threads": _Threads}


class SubEnvFailed(SteerEnvsError):
    """A sub-env of an :class:`AsyncPoolEnv` raised (its exception is the cause). ``env_id`` names it: it is idle,
    and the next ``send`` to it resets it, so a learner can put it back to work."""

    def __init__(self, env_id: int, error: BaseException) -> None:
        super().__init__(f"env {env_id} of the pool failed: {type(error).__name__}: {error}")
        self.env_id = env_id
        self.__cause__ = error  # raised from it, wherever it is raised


class AsyncPoolEnv(VectorEnv):
    """``num_envs`` envs; ``recv()`` returns the first ``batch_size`` of them ready (see the module docstring).

    ``observation_space`` / ``action_space`` are batched to ``batch_size`` (what ``recv`` returns and ``send``
    takes); ``reset()`` returns all ``num_envs`` envs. A sub-env that raises makes the ``recv`` that collects it
    raise :class:`SubEnvFailed` (its ``env_id``, the exception as its cause); the other results of that batch are
    kept for the next ``recv``, and the failed env is idle: its next ``send`` resets it (NEXT_STEP).
    ``engine``: ``greenlets`` or ``threads`` (see the module docstring); ``max_in_flight`` bounds the env calls
    running at once (None: every env)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        batch_size: int | None = None,
        max_in_flight: int | None = None,
        engine: str = "greenlets",
    ) -> None:
        if engine not in ENGINES:
            raise unknown_name("engine", engine, tuple(ENGINES))
        if not env_fns:
            raise SteerEnvsError("AsyncPoolEnv needs at least one env function")
        self.num_envs = len(env_fns)
        self.batch_size = self.num_envs if batch_size is None else batch_size
        if not isinstance(self.batch_size, int) or not 1 <= self.batch_size <= self.num_envs:
            raise SteerEnvsError(
                f"batch_size must be an integer from 1 to num_envs={self.num_envs} (how many ready envs each recv() "
                f"returns), got {batch_size!r}"
            )
        self.envs = [fn() for fn in env_fns]
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.batch_size)
        self.action_space = batch_space(self.single_action_space, self.batch_size)
        self.metadata = {**dict(first.metadata), "autoreset_mode": AutoresetMode.NEXT_STEP}
        self.render_mode = first.render_mode
        self.spec = first.spec
        self.max_in_flight = threads_for(max_in_flight, self.num_envs)
        self.engine = engine
        self._engine: _Engine = ENGINES[engine](self.max_in_flight)
        self._kept: deque[tuple[int, _Result]] = deque()  # results of a batch a failure interrupted
        self._in_flight = np.zeros(self.num_envs, dtype=np.bool_)
        self._needs_reset = np.ones(self.num_envs, dtype=np.bool_)  # NEXT_STEP: reset on the next send
        self._lock = threading.Lock()
        self.closed = False

    # -- the asynchronous API ---------------------------------------------------------------------------------
    def async_reset(
        self, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> None:
        """Start every env's reset (``seed + i`` for env ``i``, or one seed per env); ``recv()`` returns them."""
        seeds = per_env_seeds(seed, self.num_envs)
        self._check_idle(range(self.num_envs), "async_reset")
        for i in range(self.num_envs):
            self._submit(i, functools.partial(self._reset_one, i, seeds[i], options))
        self._engine.start()

    def send(self, actions: Any, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """Step the envs ``env_ids`` (default: all) with ``actions`` (one per id, in the same order; batched as
        ``action_space`` is, or any sequence). An env whose episode ended is reset instead (NEXT_STEP)."""
        ids = list(range(self.num_envs)) if env_ids is None else [int(i) for i in np.asarray(env_ids).reshape(-1)]
        per_env = self._unbatch(actions, len(ids))
        if len(set(ids)) != len(ids) or any(not 0 <= i < self.num_envs for i in ids):
            raise SteerEnvsError(f"env_ids must be distinct ids in [0, {self.num_envs}), got {ids}")
        self._check_idle(ids, "send")
        for i, action in zip(ids, per_env):
            self._submit(i, functools.partial(self._step_one, i, action))
        self._engine.start()

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The first ``batch_size`` envs ready: ``(obs, rewards, terminations, truncations, infos)``, in the order
        they finished; ``infos["env_id"]`` their ids. Blocks until that many are ready."""
        self._check_open("recv")
        if self.batch_size > int(self._in_flight.sum()) + len(self._kept):
            raise SteerEnvsError(
                f"recv() waits for {self.batch_size} envs, but only {int(self._in_flight.sum()) + len(self._kept)} are "
                "in flight: send() actions to the ids the last recv() returned first (or async_reset())"
            )
        batch = [self._kept.popleft() for _ in range(min(self.batch_size, len(self._kept)))]
        try:
            while len(batch) < self.batch_size:
                i, result = self._received()
                if isinstance(result, BaseException):  # this env failed: the others wait for the next recv
                    raise SubEnvFailed(i, result)
                batch.append((i, result))
        except BaseException:  # a failure, or an interrupt while waiting: no result already received is lost
            self._kept.extendleft(reversed(batch))
            raise
        return self._assemble(batch)

    @property
    def in_flight(self) -> list[int]:
        """The ids of the envs sent to (or resetting) whose results ``recv`` has not returned yet."""
        with self._lock:
            running = {int(i) for i in np.flatnonzero(self._in_flight)}
        return sorted(running | {i for i, _ in self._kept})

    # -- the synchronous vector API ---------------------------------------------------------------------------
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every env and return all ``num_envs`` first observations in env order (Gymnasium's ``reset``)."""
        self.async_reset(seed, options)
        done = self._collect(self.num_envs)
        obs, _, _, _, infos = self._assemble(sorted(done, key=lambda item: item[0]))
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Every env, in env order (``send`` to all, then every result): SyncVectorEnv's ``step`` under NEXT_STEP
        autoreset. Needs ``batch_size == num_envs``."""
        if self.batch_size != self.num_envs:
            raise SteerEnvsError(
                f"step() returns every env, so it needs batch_size == num_envs ({self.batch_size} != {self.num_envs}); "
                "use send(actions, env_ids) and recv()"
            )
        self.send(actions)
        return self._assemble(sorted(self._collect(self.num_envs), key=lambda item: item[0]))

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the engine (calls not started are dropped), then close every env, even if one's close raises."""
        self._engine.close()
        with self._lock:
            self._in_flight[:] = False
        self._kept.clear()
        errors = []
        for env in self.envs:
            try:
                env.close()
            except Exception as exc:  # noqa: BLE001 - the other envs still close; the first error is raised after
                errors.append(exc)
        if errors:
            raise errors[0]

    def __repr__(self) -> str:
        return (
            f"AsyncPoolEnv(num_envs={self.num_envs}, batch_size={self.batch_size}, max_in_flight={self.max_in_flight}, "
            f"engine={self.engine!r})"
        )

    # -- internals ------------------------------------------------------------------------------------------
    def _check_open(self, what: str) -> None:
        if self.closed:
            raise SteerEnvsError(f"{what}() on a closed AsyncPoolEnv: make a new pool (make_async_pool)")

    def _check_idle(self, ids: Sequence[int] | range, what: str) -> None:
        """An env is busy while it runs and while its result waits for a ``recv`` (a batch a failure cut short)."""
        self._check_open(what)
        with self._lock:
            busy = [i for i in ids if self._in_flight[i]]
        if self._kept:
            kept = {i for i, _ in self._kept}
            busy += [i for i in ids if i in kept]
        if busy:
            raise SteerEnvsError(
                f"{what}() on env(s) still in flight or with results not yet received: {busy}; recv() them first"
            )

    def _submit(self, i: int, call: Callable[[], _Result]) -> None:
        with self._lock:
            self._in_flight[i] = True
        self._engine.submit(i, call)

    def _reset_one(self, i: int, seed: int | None, options: dict[str, Any] | None) -> _Result:
        obs, info = self.envs[i].reset(seed=seed, options=options)
        self._needs_reset[i] = False
        return obs, 0.0, False, False, info

    def _step_one(self, i: int, action: Any) -> _Result:
        if self._needs_reset[i]:
            return self._reset_one(i, None, None)
        obs, reward, terminated, truncated, info = self.envs[i].step(action)
        self._needs_reset[i] = bool(terminated or truncated)
        return obs, float(reward), bool(terminated), bool(truncated), info

    def _received(self) -> tuple[int, _Result | BaseException]:
        """The next env to finish (blocking); it is no longer in flight, and one that failed will reset."""
        i, result = self._engine.next()
        with self._lock:
            self._in_flight[i] = False
        if isinstance(result, BaseException):
            self._needs_reset[i] = True
        return i, result

    def _collect(self, n: int) -> list[tuple[int, _Result]]:
        """``n`` results for a synchronous call; the first failure is raised once all ``n`` have arrived, so no env
        of the call is left in flight."""
        done: list[tuple[int, _Result]] = []
        error: BaseException | None = None
        for _ in range(n):
            i, result = self._received()
            if isinstance(result, BaseException):
                error = error or SubEnvFailed(i, result)
            else:
                done.append((i, result))
        if error is not None:
            raise error
        return done

    def _unbatch(self, actions: Any, n: int) -> list[Any]:
        if isinstance(actions, dict):
            short = {k: len(v) for k, v in actions.items() if len(v) != n}
            if short:
                raise SteerEnvsError(f"send() got {short} actions per key for {n} env ids (one action per id)")
            return [{k: v[j] for k, v in actions.items()} for j in range(n)]
        per_env = list(actions) if not isinstance(actions, np.ndarray) else [actions[j] for j in range(len(actions))]
        if len(per_env) != n:
            raise SteerEnvsError(f"send() got {len(per_env)} actions for {n} env ids (one action per id)")
        return per_env

    def _assemble(self, batch: list[tuple[int, _Result]]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        n = len(batch)
        empty = create_empty_array(self.single_observation_space, n)
        assert empty is not None  # typed Optional by gymnasium; every space an env here declares has a batch
        obs = concatenate(self.single_observation_space, [r[0] for _, r in batch], empty)
        rewards = np.array([r[1] for _, r in batch], dtype=np.float64)
        terminations = np.array([r[2] for _, r in batch], dtype=np.bool_)
        truncations = np.array([r[3] for _, r in batch], dtype=np.bool_)
        infos = _batched_infos([r[4] for _, r in batch])
        infos["env_id"] = np.array([i for i, _ in batch], dtype=np.int32)
        return obs, rewards, terminations, truncations, infos


def _batched_infos(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The infos of ``len(infos)`` envs batched by Gymnasium's own rule (``VectorEnv._add_info``: a value array and
    a ``_key`` mask per key), for a batch that is not every env of a vector env."""
    holder = types.SimpleNamespace(num_envs=len(infos))
    holder._add_info = VectorEnv._add_info.__get__(holder)  # its recursion into dict values calls self._add_info
    out: dict[str, Any] = {}
    for j, info in enumerate(infos):
        out = holder._add_info(out, info, j)
    return out


def make_async_pool(
    env_id: str,
    num_envs: int,
    batch_size: int | None = None,
    max_in_flight: int | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (),
    engine: str | None = None,
    **kwargs: Any,
) -> AsyncPoolEnv:
    """``num_envs`` copies of ``gymnasium.make(env_id, **kwargs)`` (each wrapped by ``wrappers``, in order) in an
    :class:`AsyncPoolEnv` returning ``batch_size`` envs per ``recv()`` (default: all of them).
    ``max_in_flight=None`` picks by executor kind (every env for ``openai:``, one for ``sim:`` / ``hf:``);
    ``engine=None`` too (``greenlets`` unless the kind's waits block its thread, then ``threads``)."""
    from .executors.registry import waits_cooperatively

    check_num_envs(num_envs)
    if max_in_flight is None:
        max_in_flight = max_in_flight_for(env_id, num_envs, kwargs)
    if engine is None:
        engine = "greenlets" if waits_cooperatively(executor_for(env_id, kwargs)) else "threads"
    make_one = env_factory(env_id, wrappers, kwargs)
    return AsyncPoolEnv([make_one] * num_envs, batch_size=batch_size, max_in_flight=max_in_flight, engine=engine)


__all__ = ["AsyncPoolEnv", "SubEnvFailed", "make_async_pool"]
