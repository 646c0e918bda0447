"""Conformance of EVERY registered id (parametrised over gymnasium's registry, so a new id is covered without an edit
here), in the Minigrid pattern: gymnasium's ``check_env``, determinism under a seed, pickling, fork equivalence on
random states, ``get_state`` / ``set_state``, the RNG seed across forks, vectorisation (sync; async with string
observations needs ``shared_memory=False``), ``close()`` through wrappers and vector envs, ``render_mode="human"``
on every reset and step, and ``spec.nondeterministic`` for simulated and LLM-backed executors.

Actions come from one generic policy (:func:`act`): a filled ``action_mask`` slot or any index in discrete mode;
in text mode a catalogue note, ``pass``, a Search-R1 search or answer, or an arbitrary string, so each env sees the
actions its protocol knows and some it must survive."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import steer_envs  # noqa: F401
from steer_envs.envs import env_ids
from steer_envs.envs.registration import NAMESPACE
from steer_envs.envs.task_env import SearchTaskEnv

ENV_IDS = sorted(i for i in gym.registry if i.startswith(f"{NAMESPACE}/"))
MODES = ("discrete", "text")
#: every id runs on the test split with a short budget; an id whose tasks need more (GuidedSearch keeps only tasks
#: with a reference action sequence, which the train split of these benchmarks has) says so here
KW: dict = {"split": "test", "max_turns": 8}
KW_BY_ID: dict[str, dict] = {f"{NAMESPACE}/GuidedSearch-v0": {"split": "train", "benchmarks": ["musique", "nq"]}}
STEPS = 12


def kwargs_for(env_id: str, **kw) -> dict:
    return {**KW, **KW_BY_ID.get(env_id, {}), **kw}


def make(env_id: str, mode: str = "discrete", **kw):
    return gym.make(env_id, action_mode=mode, **kwargs_for(env_id, **kw))


def act(env, obs, rng: np.random.Generator):
    """One action of the generic random policy (see the module docstring)."""
    u = env.unwrapped
    if u.config.action_mode == "discrete":
        mask = obs.get("action_mask") if isinstance(obs, dict) else None
        if mask is not None and mask.any() and rng.random() < 0.9:
            return int(rng.choice(np.flatnonzero(mask)))
        return int(rng.integers(u.action_space.n))
    catalogue = getattr(u, "catalogue", ())
    choice = int(rng.integers(5))
    if choice == 0:
        return "pass"
    if choice == 1 and catalogue:
        return catalogue[int(rng.integers(len(catalogue)))].template.replace("{", "").replace("}", "")
    if choice == 2:
        words = str(obs.get("goal", obs.get("prompt", ""))).split()[-6:]
        return f"<search> {' '.join(words) or 'county seat'} </search>"
    if choice == 3:
        return "<answer> yes </answer>"
    return "".join(rng.choice(list("abc xyz:!é"), size=int(rng.integers(1, 30))))


def canon(x) -> str:
    """A value as exact text (arrays by dtype, shape and bytes: ``str`` of a large array elides its middle)."""
    if isinstance(x, dict):
        return "{" + ",".join(f"{k!r}:{canon(v)}" for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(x, np.ndarray):
        return f"array({x.dtype.str},{x.shape},{x.tobytes().hex()})"
    if isinstance(x, (list, tuple)):
        return "[" + ",".join(canon(v) for v in x) + "]"
    return repr(x)


def rollout(env, seed: int, policy_seed: int, reset: bool = True, obs=None, n: int = STEPS) -> list[str]:
    """Step with the seeded generic policy until the episode ends; one exact record per step."""
    rng = np.random.default_rng(policy_seed)
    trace = []
    if reset:
        obs, info = env.reset(seed=seed)
        trace.append(canon((obs, info)))
    elif obs is None:
        obs = env.unwrapped._observation()
    for _ in range(n):
        obs, r, term, trunc, info = env.step(act(env, obs, rng))
        trace.append(canon((obs, r, term, trunc, info)))
        if term or trunc:
            break
    return trace


def released(env) -> bool:
    """Whether a closed env's backends were let go: the env says so, and holds no retriever reference."""
    u = env.unwrapped
    holder = getattr(u, "executor", u)
    return u.closed and getattr(holder, "_retriever", None) is None


def test_the_registry_is_what_the_suite_covers():
    assert set(env_ids()) == set(ENV_IDS) and ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_check_env(env_id, mode):
    env = make(env_id, mode)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.contains(env.reset(seed=0)[0])
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_determinism_under_a_seed(env_id, mode):
    a, b = make(env_id, mode), make(env_id, mode)
    assert not a.spec.nondeterministic  # the simulated executors (and GuidedSearch's retriever) are deterministic
    for seed in (0, 1, 2):
        assert rollout(a, seed, seed + 50) == rollout(b, seed, seed + 50)
    # different seeds give different episodes (the check is not vacuous)
    assert len({rollout(a, s, 7)[0] for s in range(6)}) > 1


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_round_trip_mid_episode(env_id):
    env = make(env_id)
    obs, _ = env.reset(seed=5)
    obs, _, term, trunc, _ = env.step(act(env, obs, np.random.default_rng(5)))
    if term or trunc:  # an env that decides once (planning): pickle at the start of the next episode instead
        obs, _ = env.reset(seed=6)
    blob = pickle.dumps(env)
    assert len(blob) < 2_000_000  # the index and corpus are not copied
    clone = pickle.loads(blob)
    assert rollout(clone, 0, 9, reset=False, obs=obs) == rollout(env, 0, 9, reset=False, obs=obs)


def advance(env, n: int, policy_seed: int) -> bool:
    """Take ``n`` steps of the seeded policy from the current state; whether the episode ended."""
    rng = np.random.default_rng(policy_seed)
    obs = env.unwrapped._observation()
    for _ in range(n):
        obs, _, term, trunc, _ = env.step(act(env, obs, rng))
        if term or trunc:
            return True
    return False


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_fork_equivalence_on_random_states(env_id, mode):
    env = make(env_id, mode)
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(8):
        env.reset(seed=seed)
        if advance(env, int(rng.integers(0, 4)), seed + 100):
            continue
        fork = env.unwrapped.fork()
        reference_state = pickle.dumps(env.unwrapped.get_state())
        from_fork = rollout(fork, seed, seed + 200, reset=False)
        # the original did not see the fork's changes, and continues identically
        assert pickle.dumps(env.unwrapped.get_state()) == reference_state
        assert rollout(env.unwrapped, seed, seed + 200, reset=False) == from_fork
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_fork_with_a_seed_is_reproducible_and_carries_the_seed(env_id):
    env = make(env_id)
    env.reset(seed=3)
    u = env.unwrapped
    assert u.np_random_seed == 3
    plain = u.fork()
    assert plain.np_random_seed == 3  # an unseeded fork keeps the parent's seed with its generator
    for seed in (11, 12):
        fork = u.fork(seed=seed)
        assert fork.np_random_seed == seed and fork.get_state()["np_random_seed"] == seed
        again = u.fork(seed=seed)
        assert rollout(fork, 0, 1, reset=False) == rollout(again, 0, 1, reset=False)
        # the next episode's task draw follows the fork's seed
        assert canon(fork.reset()[0]) == canon(again.reset()[0])
    assert u.np_random_seed == 3  # forking left the parent's seed alone


def test_forks_with_different_seeds_continue_differently():
    env = make("steer_envs/SearchSteering-v0", benchmarks=["hotpotqa"])
    env.reset(seed=3)
    env.step(0)
    if env.unwrapped.executor.done:
        env.reset(seed=4)
    runs = {seed: rollout(env.unwrapped.fork(seed=seed), 0, 2, reset=False) for seed in range(8)}
    assert len({str(r) for r in runs.values()}) > 1


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_get_state_set_state_restores_an_episode_and_its_seed(env_id):
    env = make(env_id)
    obs, _ = env.reset(seed=11)
    state = env.unwrapped.get_state()
    first = rollout(env, 0, 4, reset=False, obs=obs)
    env.reset(seed=99)
    assert env.unwrapped.np_random_seed == 99
    env.unwrapped.set_state(state)
    assert env.unwrapped.np_random_seed == 11  # the seed came back with the generator
    assert rollout(env, 0, 4, reset=False, obs=obs) == first


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_vec_sync(env_id):
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **kwargs_for(env_id))
    obs, infos = envs.reset(seed=0)
    assert obs["turn"].shape == (2,)
    for _ in range(3):
        obs, rewards, term, trunc, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert rewards.shape == (2,)
    envs.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_close_releases_the_backends_through_wrappers_and_vector_envs(env_id):
    env = make(env_id)
    assert isinstance(env, gym.Wrapper) and isinstance(env.unwrapped, SearchTaskEnv)
    obs, _ = env.reset(seed=0)
    env.step(act(env, obs, np.random.default_rng(0)))  # the retriever is loaded by now
    holder = getattr(env.unwrapped, "executor", env.unwrapped)
    assert holder._retriever is not None
    fork = env.unwrapped.fork()
    fork.close()  # a fork leaves the shared backends to its parent
    assert fork.closed and holder._retriever is not None
    env.close()  # through gymnasium's wrappers
    assert released(env)
    env.close()  # idempotent
    assert released(env)

    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **kwargs_for(env_id))
    envs.reset(seed=0)
    subs = list(envs.envs)
    assert not any(e.unwrapped.closed for e in subs)
    envs.close()
    assert all(released(e) for e in subs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_human_render_prints_on_every_reset_and_step(env_id, capsys):
    env = make(env_id, render_mode="human")
    obs, _ = env.reset(seed=0)
    printed = capsys.readouterr().out
    assert printed.strip() and printed.strip() == env.unwrapped._render_text().strip()
    env.step(act(env, obs, np.random.default_rng(0)))
    assert capsys.readouterr().out.strip() == env.unwrapped._render_text().strip()
    assert env.render() is None  # human mode prints; ansi returns the text
    assert capsys.readouterr().out.strip() == env.unwrapped._render_text().strip()
    ansi = make(env_id, render_mode="ansi")
    ansi.reset(seed=0)
    assert capsys.readouterr().out == "" and ansi.render().strip() == printed.strip()


@pytest.mark.parametrize("env_id", [i for i in ENV_IDS if "executor" in gym.spec(i).kwargs])
def test_an_llm_backed_executor_makes_the_env_nondeterministic(env_id):
    """Ids are registered per env (deterministic, for the default simulated executor); the spec an env made with
    an LLM-backed executor carries is nondeterministic, and gymnasium's checker then skips its determinism checks."""
    assert gym.spec(env_id).nondeterministic is False
    sim = make(env_id)
    assert sim.unwrapped.deterministic and sim.spec.nondeterministic is False
    spec = "openai:fake@http://127.0.0.1:9/v1"  # built without a request: nothing listens there
    kw = {"roles": {"verifier": spec}} if "Handoff" in env_id else {"executor": spec}
    llm = make(env_id, **kw)
    assert not llm.unwrapped.deterministic
    assert llm.spec.nondeterministic is True and llm.unwrapped.spec.nondeterministic is True
    assert gym.spec(env_id).nondeterministic is False  # the registry's spec is untouched
    llm.close()


def test_close_releases_an_llm_executors_connections():
    """A real loopback OpenAI-compatible server: after an episode the client holds a kept-alive connection;
    ``env.close()`` closes it (the backend stays usable: the next request opens a new one)."""
    from tests.servers.latency_server import LatencyServer

    with LatencyServer(0.0) as server:
        env = make("steer_envs/SearchSteering-v0", executor=server.spec)
        assert env.spec.nondeterministic is True
        env.reset(seed=0)
        for _ in range(4):
            *_, term, trunc, _ = env.step(0)
            if term or trunc:
                break
        pool = env.unwrapped.executor.backend.http
        assert pool._idle, "the episode should have left a kept-alive connection"
        env.close()
        assert pool._idle == [] and env.unwrapped.closed


@pytest.mark.slow
def test_make_vec_async_with_string_observations():
    env_id = "steer_envs/SearchSteering-v0"
    async_envs = gym.make_vec(
        env_id, num_envs=2, vectorization_mode="async", vector_kwargs={"shared_memory": False}, **KW
    )
    sync_envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **KW)
    a_obs, _ = async_envs.reset(seed=7)
    s_obs, _ = sync_envs.reset(seed=7)
    assert list(a_obs["transcript"]) == list(s_obs["transcript"])
    for step in range(4):
        actions = np.array([step % 9, 0], dtype=np.int64)
        a = async_envs.step(actions)
        s = sync_envs.step(actions)
        assert list(a[0]["transcript"]) == list(s[0]["transcript"])
        np.testing.assert_array_equal(a[1], s[1])
    async_envs.close()
    sync_envs.close()


@pytest.mark.parametrize("env_id", [i for i in ENV_IDS if "executor" in gym.spec(i).kwargs])
def test_the_envs_default_executor_passes_the_projects_checker(env_id):
    """``steer_envs.testing.check_executor`` on what the env supervises, built as the env builds it."""
    from steer_envs.executors.base import Executor, ExecutorContext
    from steer_envs.testing import check_executor

    env = make(env_id).unwrapped
    context = ExecutorContext(max_turns=env.config.max_turns)

    def factory():
        return env._make_executor(env.config.executor, context)

    if not isinstance(factory(), Executor):
        pytest.skip(f"{type(factory()).__name__} is not an Executor yet (check_executor needs one)")
    report = check_executor(factory, env.tasks[:2])
    assert {"protocol", "determinism", "fork independence", "state round trip"} <= set(report.passed)
