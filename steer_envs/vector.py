"""Many episodes in flight from one process: a Gymnasium vector env whose sub-envs step in threads.

Why: an ``openai:`` executor's step is one HTTP request to a model server and some milliseconds of Python around
it. ``SyncVectorEnv`` sends those requests one after another (32 envs against a server answering in 100 ms: 7
requests/s, 2% of what the server takes); ``AsyncVectorEnv`` spends a process per env, each holding its own
corpus and BM25 index. Threads cost neither: while one env waits on its reply the others send theirs, and all
share one index, one model backend and its keep-alive connections (:class:`~steer_envs.httpio.KeepAlivePool`).

:class:`ConcurrentVectorEnv` is :class:`gymnasium.vector.SyncVectorEnv` with the per-env work of ``reset`` and
``step`` running on a thread pool of at most ``max_in_flight`` threads. Everything else (spaces, ``call``,
``get_attr``, ``set_attr``, the three autoreset modes, ``reset_mask``) is SyncVectorEnv's, and the batched results
are assembled in env order exactly as SyncVectorEnv assembles them: for a deterministic executor (``sim:``) the
observations, rewards, flags and infos equal SyncVectorEnv's for the same seeds.

>>> envs = make_concurrent_vec("steer_envs/SearchSteering-v0", 64, executor="openai:qwen@http://127.0.0.1:8000/v1")
>>> spec = dataclasses.replace(gymnasium.spec("steer_envs/SearchSteering-v0"),
...                            vector_entry_point=VectorEntryPoint("steer_envs/SearchSteering-v0"))
>>> envs = gymnasium.make_vec(spec, 64, vectorization_mode="vector_entry_point",
...                           executor="openai:qwen@http://127.0.0.1:8000/v1", max_in_flight=64)  # the same

The registered ids carry no ``vector_entry_point`` (gymnasium would make it ``make_vec``'s default, which refuses
``wrappers=`` / ``vector_kwargs=``): ``gymnasium.make_vec(id, n)`` stays SyncVectorEnv.

What the barrier costs: ``step`` returns when the slowest of its N requests has, so every step waits for the
slowest generation of the batch, and an env whose reply came early sits idle until then. Real generation latencies
differ by an order of magnitude between requests; against a loopback server in its own process whose latency is
lognormal (mean 1 s, coefficient of variation 1), the slowest of 256 draws averages about 8 s, and N = 256 envs
reached 15 % of N / latency, where the same 256 episodes without a barrier (the ``threads`` rollout pool behind
``steer-envs eval``, ``compare`` and the steering trainer: each episode in flight on its own) reached the ceiling.
At a fixed latency the barrier costs little: at 100 ms both reached 29 to 43 % of N / latency on 2 shared cores,
bound by client CPU. See BENCHMARKS.md, "Episodes in flight without a per-step barrier". It stays for Gymnasium
users who want the vector API; for many LLM episodes of varying length the rollout pools are the faster path.

``max_in_flight=None`` (the default) picks by executor kind: every env at once for I/O-bound kinds (``openai:``;
:func:`~steer_envs.executors.registry.is_io_bound`), one (serial, in the calling thread: SyncVectorEnv's
behaviour, and its speed) for CPU-bound ones (``sim:``, ``hf:``), which threads would only make contend for the
interpreter lock. The model server sees at most the backend's own ``max_in_flight`` requests at once (an
``OpenAIOptions`` field, e.g. ``openai:qwen@http://...?max_in_flight=32``), whatever the env count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, iterate

from .errors import SteerEnvsError


class ConcurrentVectorEnv(SyncVectorEnv):
    """SyncVectorEnv whose sub-envs ``reset`` and ``step`` concurrently, at most ``max_in_flight`` at once.

    The sub-envs are built one after another in the calling thread (construction loads shared data once);
    ``close()`` stops the threads after the running calls finish, then closes every sub-env. A sub-env that
    raises in ``step``/``reset`` makes the call raise that exception (the lowest env index first) after every
    other env's call of that batch has finished, so no thread is left running on a half-updated batch.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        max_in_flight: int | None = None,
        copy: bool = True,
        observation_mode: Any = "same",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    ) -> None:
        super().__init__(env_fns, copy=copy, observation_mode=observation_mode, autoreset_mode=autoreset_mode)
        self.max_in_flight = threads_for(max_in_flight, self.num_envs)
        self._threads: ThreadPoolExecutor | None = None
        if self.max_in_flight > 1:
            self._threads = ThreadPoolExecutor(max_workers=self.max_in_flight, thread_name_prefix="steer-vec")

    # -- running per-env calls ------------------------------------------------------------------------------
    def _run_all(self, calls: list[tuple[int, Callable[[], Any]]]) -> dict[int, Any]:
        """``{env index: result}`` of every ``(index, call)``, run concurrently; the first failure re-raised
        once all are done."""
        if self._threads is None or len(calls) <= 1:
            return {i: call() for i, call in calls}
        futures: list[tuple[int, Future]] = [(i, self._threads.submit(call)) for i, call in calls]
        results: dict[int, Any] = {}
        error: BaseException | None = None
        for i, future in futures:  # waits for every call, in env order
            try:
                results[i] = future.result()
            except BaseException as exc:  # noqa: BLE001 - re-raised below, after the batch settled
                error = error or exc
        if error is not None:
            raise error
        return results

    # -- the VectorEnv API ----------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """As :meth:`SyncVectorEnv.reset` (seeds ``seed + i``, ``options["reset_mask"]``), concurrently."""
        seed = per_env_seeds(seed, self.num_envs)
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray) or mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise TypeError(
                    f"options['reset_mask'] must be a numpy bool array of shape ({self.num_envs},), got {mask!r}"
                )
            if not np.any(mask):
                raise ValueError(f"options['reset_mask'] must contain at least one True value, got {mask}")
        else:
            self._terminations = np.zeros((self.num_envs,), dtype=np.bool_)
            self._truncations = np.zeros((self.num_envs,), dtype=np.bool_)
            self._autoreset_envs = np.zeros((self.num_envs,), dtype=np.bool_)
        self._terminations[mask] = False
        self._truncations[mask] = False
        self._autoreset_envs[mask] = False

        def reset_one(i: int) -> Callable[[], Any]:
            return lambda: self.envs[i].reset(seed=seed[i], options=options)

        done = self._run_all([(i, reset_one(i)) for i in range(self.num_envs) if mask[i]])
        infos: dict[str, Any] = {}
        for i in sorted(done):
            self._env_obs[i], env_info = done[i]
            infos = self._add_info(infos, env_info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return deepcopy(self._observations) if self.copy else self._observations, infos

    def _step_one(self, i: int, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict, dict | None]:
        """One sub-env's part of a vector step under the autoreset mode: ``(obs, reward, terminated, truncated,
        info, final)`` (``final``: SAME_STEP's ``final_obs``/``final_info`` of an episode that just ended)."""
        env = self.envs[i]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            if self._autoreset_envs[i]:
                obs, info = env.reset()
                return obs, 0.0, False, False, info, None
            return (*env.step(action), None)
        if self.autoreset_mode == AutoresetMode.DISABLED:
            assert not self._autoreset_envs[i], f"{self._autoreset_envs=}"
            return (*env.step(action), None)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            obs, reward, terminated, truncated, info = env.step(action)
            final = None
            if terminated or truncated:
                final = {"final_obs": obs, "final_info": info}
                obs, info = env.reset()
            return obs, reward, terminated, truncated, info, final
        raise ValueError(f"Unexpected autoreset mode, {self.autoreset_mode}")

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """As :meth:`SyncVectorEnv.step`, the sub-envs stepping concurrently; results in env order."""
        actions = list(iterate(self.action_space, actions))
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions (one per env), got {len(actions)}")

        def step_one(i: int) -> Callable[[], Any]:
            return lambda: self._step_one(i, actions[i])

        done = self._run_all([(i, step_one(i)) for i in range(self.num_envs)])
        infos: dict[str, Any] = {}
        for i in range(self.num_envs):
            obs, reward, terminated, truncated, env_info, final = done[i]
            self._env_obs[i] = obs
            self._rewards[i], self._terminations[i], self._truncations[i] = reward, terminated, truncated
            if final is not None:
                infos = self._add_info(infos, final, i)
            infos = self._add_info(infos, env_info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (
            deepcopy(self._observations) if self.copy else self._observations,
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the threads (after the calls already running), then close the sub-envs."""
        threads, self._threads = getattr(self, "_threads", None), None
        if threads is not None:
            threads.shutdown(wait=True, cancel_futures=True)
        super().close_extras(**kwargs)

    def __repr__(self) -> str:
        return f"ConcurrentVectorEnv(num_envs={self.num_envs}, max_in_flight={self.max_in_flight})"


def default_max_in_flight(num_envs: int, executor: str | None) -> int:
    """Every env at once for an I/O-bound executor kind (``openai:``), else 1 (serial, as SyncVectorEnv)."""
    from .executors.registry import is_io_bound

    return num_envs if is_io_bound(executor) else 1


def threads_for(max_in_flight: int | None, num_envs: int) -> int:
    """How many envs a vector env runs at once: ``max_in_flight`` (a positive integer) capped at ``num_envs``, or
    every env for ``None``."""
    if max_in_flight is not None and (not isinstance(max_in_flight, int) or max_in_flight < 1):
        raise SteerEnvsError(f"max_in_flight must be a positive integer (or None: one per env), got {max_in_flight!r}")
    return min(num_envs, max_in_flight or num_envs)


def per_env_seeds(seed: int | Sequence[int | None] | None, num_envs: int) -> list[int | None]:
    """One seed per env as Gymnasium's vector envs define them: ``seed + i`` for env ``i``, ``None`` for all, or
    a list with one per env (else Gymnasium's ``ValueError``, so both vector envs fail as SyncVectorEnv does)."""
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, int):
        return [seed + i for i in range(num_envs)]
    seeds = list(seed)
    if len(seeds) != num_envs:
        raise ValueError(
            f"If seeds are passed as a list the length must match num_envs={num_envs} but got length={len(seeds)}."
        )
    return seeds


def check_num_envs(num_envs: Any) -> None:
    if not isinstance(num_envs, int) or num_envs < 1:
        raise SteerEnvsError(f"num_envs must be a positive integer, got {num_envs!r}")


def max_in_flight_for(env_id: str, num_envs: int, kwargs: dict[str, Any]) -> int:
    """:func:`default_max_in_flight` for ``gymnasium.make(env_id, **kwargs)``'s executor (the id's default when
    ``kwargs`` names none)."""
    return default_max_in_flight(num_envs, executor_for(env_id, kwargs))


def executor_for(env_id: str, kwargs: dict[str, Any]) -> str | None:
    """The executor spec ``gymnasium.make(env_id, **kwargs)`` runs (the id's default when ``kwargs`` names none)."""
    return kwargs["executor"] if "executor" in kwargs else (gym.spec(env_id).kwargs or {}).get("executor")


def env_factory(
    env_id: str, wrappers: Sequence[Callable[[gym.Env], gym.Env]], kwargs: dict[str, Any]
) -> Callable[[], gym.Env]:
    """A function making ``gymnasium.make(env_id, **kwargs)`` wrapped by ``wrappers`` in order (one per sub-env)."""
    import steer_envs  # noqa: F401  (registers the ids)

    def make_one() -> gym.Env:
        env = gym.make(env_id, **kwargs)
        for wrapper in wrappers:
            env = wrapper(env)
        return env

    return make_one


def make_concurrent_vec(
    env_id: str,
    num_envs: int,
    max_in_flight: int | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (),
    copy: bool = True,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    **kwargs: Any,
) -> ConcurrentVectorEnv:
    """``num_envs`` copies of ``gymnasium.make(env_id, **kwargs)`` (each wrapped by ``wrappers``, in order) in a
    :class:`ConcurrentVectorEnv`; ``max_in_flight=None`` picks by executor kind (:func:`default_max_in_flight`)."""
    check_num_envs(num_envs)
    if max_in_flight is None:
        max_in_flight = max_in_flight_for(env_id, num_envs, kwargs)
    return ConcurrentVectorEnv(
        [env_factory(env_id, wrappers, kwargs)] * num_envs,
        max_in_flight=max_in_flight,
        copy=copy,
        autoreset_mode=autoreset_mode,
    )


@dataclass(frozen=True)
class VectorEntryPoint:
    """A ``vector_entry_point`` building a :class:`ConcurrentVectorEnv` (gymnasium passes ``num_envs`` and the
    env's keyword arguments). Not registered on the ids (it would become ``make_vec``'s default and break
    ``wrappers=`` / ``vector_kwargs=``); opt in per call with a spec that carries it:
    ``gymnasium.make_vec(dataclasses.replace(gymnasium.spec(id), vector_entry_point=VectorEntryPoint(id)), n,
    vectorization_mode="vector_entry_point", max_in_flight=..., **env_kwargs)``, or in a registration of your own."""

    env_id: str

    def __call__(
        self,
        num_envs: int = 1,
        max_in_flight: int | None = None,
        copy: bool = True,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> ConcurrentVectorEnv:
        return make_concurrent_vec(
            self.env_id, num_envs, max_in_flight=max_in_flight, copy=copy, autoreset_mode=autoreset_mode, **kwargs
        )


__all__ = [
    "ConcurrentVectorEnv",
    "VectorEntryPoint",
    "default_max_in_flight",
    "env_factory",
    "make_concurrent_vec",
    "max_in_flight_for",
]
