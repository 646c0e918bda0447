"""The LLM search executor: protocol loop, interventions, forks, failures; on scripted, tiny and real models."""

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401 - registers the envs
from steer_envs.data import load_tasks
from steer_envs.errors import SteerEnvsError, UnknownNameError
from steer_envs.executors.base import ExecutorContext, Intervention
from steer_envs.executors.llm_search import LLMSearchExecutor, closing_tag
from steer_envs.executors.prompts import get_prompt_template
from steer_envs.executors.protocol import INVALID_ACTION_REPLY
from steer_envs.executors.registry import is_deterministic, make_executor
from steer_envs.llm.base import Generation
from steer_envs.llm.registry import split_spec_options
from tests.llm.support import FaultServer, ScriptedBackend
from tests.servers.openai_server import OpenAICompatibleServer

SEARCH = "<think> I should look this up. </think>\n<search> capital of france </search> trailing text never seen"
ANSWER = "<think> The results say Paris. </think>\n<answer> Paris </answer>"
FAIL_FAST = "timeout=0.3&max_retries=1&backoff=0.01&max_backoff=0.02"


@pytest.fixture()
def task(mini_data_dir):
    return next(t for t in load_tasks(["nq"], split="train", data_dir=mini_data_dir) if t.id == "nq/mini2")


def scripted(mini_data_dir, replies, **settings):
    ctx = ExecutorContext(
        data_dir=str(mini_data_dir), max_turns=4, extra={"backend": ScriptedBackend(replies), **settings}
    )
    return make_executor("hf:scripted", ctx)


def test_llm_kinds_are_registered_nondeterministic():
    assert not is_deterministic("hf:gemma-3-270m") and not is_deterministic("openai:m@http://x")
    assert not is_deterministic("llamacpp:model.gguf")


def test_spec_options_and_bad_settings():
    assert split_spec_options("gemma-3-270m?max_new_tokens=48&template=few-shot&temperature=0.5") == (
        "gemma-3-270m",
        {"max_new_tokens": 48, "template": "few-shot", "temperature": 0.5},
    )
    with pytest.raises(SteerEnvsError, match="key=value"):
        split_spec_options("x?max_new_tokens")
    with pytest.raises(UnknownNameError, match="few-shot"):
        make_executor("hf:x?template=nope", ExecutorContext(extra={"backend": ScriptedBackend(["x"])}))
    with pytest.raises(SteerEnvsError, match="unknown hf backend option"):
        make_executor("hf:gemma-3-270m?colour=red")


def test_search_r1_template_is_the_recorded_instruction(shared_data_dir):
    from steer_envs.data import load_rollouts

    row = next(iter(load_rollouts("search_r1_base", data_dir=shared_data_dir)))
    assert get_prompt_template("search-r1").render(row.question) == row.prompt


def test_search_then_answer_episode_with_real_bm25(mini_data_dir, task):
    ex = scripted(mini_data_dir, [SEARCH, ANSWER])
    assert isinstance(ex, LLMSearchExecutor) and not ex.deterministic
    ex.reset(task, seed=1)
    assert ex.prompt.endswith(f"Question: {task.question}\n")
    first = ex.step()
    assert first.kind == "search" and first.query == "capital of france"
    assert first.segment.endswith("</search>") and "trailing" not in first.segment
    assert first.observation.startswith("\n\n<information>Doc 1(Title: Paris)")
    second = ex.step()
    assert second.kind == "answer" and ex.done and ex.answer == "Paris"
    assert ex.transcript == first.segment + first.observation + second.segment
    assert ex.backend.calls[1] == ex.prompt + first.segment + first.observation  # the model read the results
    assert ex.stats.searches == 1 and ex.stats.turns == 2 and ex.stats.tokens > 0


def test_searches_go_through_the_process_search_cache_keyed_by_the_data_folder(mini_data_dir, task, monkeypatch):
    from steer_envs.retrieval import cache

    monkeypatch.setattr(cache, "_ENABLED", [True])
    first = scripted(mini_data_dir, [SEARCH, ANSWER])
    first.reset(task, seed=1)
    searched = first.step()
    calls, misses = cache.STATS.calls, cache.STATS.misses
    again = scripted(mini_data_dir, [SEARCH, ANSWER])
    again.reset(task, seed=1)
    assert again.step().observation == searched.observation
    assert (cache.STATS.calls, cache.STATS.misses) == (calls + 1, misses)  # answered from the cache
    assert cache.search_key("bm25s", None) == "bm25s"
    assert cache.search_key("bm25s", "/data/a") != cache.search_key("bm25s", "/data/b")  # two indexes, two keys


def test_invalid_output_gets_the_search_r1_reply_and_the_budget_ends_the_episode(mini_data_dir, task):
    ex = scripted(mini_data_dir, ["I am not sure what to do."])
    ex.reset(task)
    results = [ex.step() for _ in range(4)]
    assert all(r.kind == "invalid" and r.observation == INVALID_ACTION_REPLY for r in results)
    assert ex.done and ex.answer is None and ex.stats.invalid == 4


def test_interventions_enter_the_context_the_model_reads(mini_data_dir, task):
    ex = scripted(mini_data_dir, [SEARCH, ANSWER, ANSWER])
    ex.reset(task)
    ex.step()
    ex.intervene(Intervention("note", "Check the second entity."))
    ex.step()
    assert "<guidance> Check the second entity. </guidance>" in ex.backend.calls[1]
    assert ex.done
    ex.intervene(Intervention("reject", "Wrong city."))
    assert not ex.done and ex.answer is None
    ex.step()
    assert "Your answer was rejected. Wrong city." in ex.backend.calls[2] and ex.answer == "Paris"


def test_forks_are_independent(mini_data_dir, task):
    ex = scripted(mini_data_dir, [SEARCH, ANSWER])
    ex.reset(task, seed=5)
    ex.step()
    fork = ex.fork()
    assert fork.backend is ex.backend and fork.transcript == ex.transcript
    fork.intervene(Intervention("note", "only in the fork"))
    fork.step()
    assert fork.done and not ex.done
    assert "only in the fork" not in ex.transcript and ex.stats.turns == 1 and ex.stats.interventions == 0
    fork.reseed(99)
    assert fork._seed == 99 and ex._seed == 5
    state = ex.get_state()
    ex.step()
    ex.set_state(state)
    assert not ex.done and ex.stats.turns == 1


def test_closing_tag_is_recovered_when_a_server_omits_it():
    assert closing_tag(Generation("<think> a </think> <search> q ", 5, "stop")) == "</search>"
    assert closing_tag(Generation("<search> q </search> <answer> x ", 5, "stop")) == "</answer>"
    assert closing_tag(Generation("<search> q ", 5, "length")) == ""
    assert closing_tag(Generation("just text", 5, "stop")) == ""
    assert closing_tag(Generation("<search> q ", 5, "stop", "</search>")) == "</search>"
    assert closing_tag(Generation("<answer> Paris.", 5, "stop", "\nQuestion:")) == "</answer>"


def test_tiny_model_episode_runs_the_real_loop(mini_data_dir, task, tiny_model_dir):
    ex = make_executor(
        f"hf:{tiny_model_dir}?max_new_tokens=12&template=asearcher",
        ExecutorContext(data_dir=str(mini_data_dir), max_turns=3),
    )
    ex.reset(task, seed=0)
    while not ex.done:
        result = ex.step()
        assert result.kind in ("search", "answer", "invalid") and result.tokens > 0
    assert ex.stats.turns <= 3 and ex.stats.tokens <= 36
    assert ex.transcript == "".join(r.segment + r.observation for r in ex.history)


def test_openai_executor_over_http_to_the_projects_own_server(mini_data_dir, task):
    backend = ScriptedBackend([SEARCH, ANSWER])
    with OpenAICompatibleServer(backend, model_name="scripted") as server:
        ex = make_executor(server.spec, ExecutorContext(data_dir=str(mini_data_dir), max_turns=4))
        ex.reset(task)
        first, second = ex.step(), ex.step()
    assert first.kind == "search" and first.segment.endswith("</search>") and "Paris" in first.observation
    assert second.kind == "answer" and ex.answer == "Paris" and server.requests_served == 2


def test_backend_failure_ends_the_episode_as_failed_with_the_reason(mini_data_dir, task):
    with FaultServer("500") as server:
        ex = make_executor(f"openai:m@{server.base_url}?{FAIL_FAST}", ExecutorContext(data_dir=str(mini_data_dir)))
        ex.reset(task)
        result = ex.step()
    assert result.kind == "failed" and ex.done and ex.answer is None
    assert "HTTP 500" in ex.failure and server.base_url in ex.failure and server.posts == 2


def test_env_records_a_failing_backend_and_a_vector_run_does_not_crash(mini_data_dir):
    with FaultServer("malformed") as server:
        spec = f"openai:m@{server.base_url}?{FAIL_FAST}"
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            executor=spec,
            data_dir=str(mini_data_dir),
            max_turns=3,
            benchmarks=["nq"],
            split="train",
        )
        obs, info = env.reset(seed=0)
        terminated = truncated = False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(0)
        assert "malformed JSON" in info["failure"] and server.base_url in info["failure"]
        assert info["f1"] == 0.0 and truncated and not terminated and info["failure_source"] == "backend"
        env.close()
        vec = gym.vector.SyncVectorEnv(
            [
                lambda: gym.make(
                    "steer_envs/SearchSteering-v0",
                    executor=spec,
                    data_dir=str(mini_data_dir),
                    max_turns=2,
                    benchmarks=["nq"],
                    split="train",
                )
                for _ in range(3)
            ]
        )
        vec.reset(seed=1)
        for _ in range(3):
            _, rewards, terminated, truncated, infos = vec.step([0, 0, 0])
            assert list(rewards) == [0.0, 0.0, 0.0] and not any(terminated)  # failed episodes are truncated
        vec.close()


# -- the real model ------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.llm
def test_search_steering_episode_on_gemma(gemma_backend, shared_data_dir):
    env = gym.make(
        "steer_envs/SearchSteering-v0",
        executor="hf:gemma-3-270m?max_new_tokens=40",
        max_turns=2,
        benchmarks=["nq"],
        split="dev",
    )
    obs, info = env.reset(seed=0)
    ex = env.unwrapped.executor
    assert ex.backend is gemma_backend and ex.settings.template == "few-shot"
    terminated = ex.done
    steps = 0
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(1 if steps == 0 else 0)
        steps += 1
    assert 1 <= info["executor_turns"] <= 2 and info["tokens"] > 0 and "failure" not in info
    assert 0.0 <= info["f1"] <= 1.0 and info["interventions"] >= 1
    # the steerer's first note came before the first turn, and the model read it
    assert ex.transcript.startswith("\n<guidance>") and ex.history[0].segment in ex.transcript
    assert "\nQuestion:" not in "".join(r.segment for r in ex.history)  # the few-shot stop ends runaway turns


@pytest.mark.slow
@pytest.mark.llm
def test_openai_executor_episode_against_a_server_wrapping_gemma(gemma_backend, shared_data_dir):
    with OpenAICompatibleServer(gemma_backend, model_name="gemma-3-270m") as server:
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            executor=f"{server.spec}?max_new_tokens=40&template=few-shot",
            max_turns=2,
            benchmarks=["triviaqa"],
            split="dev",
        )
        obs, info = env.reset(seed=0)
        terminated = env.unwrapped.executor.done
        while not terminated:
            obs, reward, terminated, truncated, info = env.step(0)
    assert server.requests_served == info["executor_turns"] >= 1
    assert "failure" not in info and info["tokens"] > 0
