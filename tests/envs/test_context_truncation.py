"""An executor that outgrows its model's context ends its episode as a *scored* truncation (no answer, F1 0, no
failure), so evaluations keep it in their means; over the ``openai:`` backend (the stand-in server enforcing a
small ``max_model_len`` as vLLM does), over ``hf:`` (a tiny model with a small context), in GuidedSearch-v0, and
through the evaluation harness, where dropping these episodes would bias the mean upward."""

from __future__ import annotations

import threading

import gymnasium as gym
import pytest

import steer_envs  # noqa: F401 - registers the envs
from steer_envs.data import load_tasks
from steer_envs.episodes import play_episode
from steer_envs.executors.prompts import get_prompt_template
from steer_envs.failures import CONTEXT_TRUNCATION, episode_failed, truncated_by_context
from steer_envs.llm.base import ContextOverflowError, Generation, GenerationConfig, truncate_at_stop
from tests.servers.openai_server import OpenAICompatibleServer


def _run_passes(env, seed: int = 0, task_id: str | None = None):
    obs, info = env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step("pass")
        steps += 1
    return reward, terminated, truncated, info, steps


def _assert_context_truncation(reward, terminated, truncated, info):
    assert truncated and not terminated
    assert info["truncation"] == CONTEXT_TRUNCATION and "context" in info["truncation_detail"]
    assert info["answer"] is None and info["f1"] == 0.0 and info["em"] == 0.0 and reward == 0.0
    assert "failure" not in info and "failure_source" not in info
    assert not episode_failed(info) and truncated_by_context(info)


def test_openai_executor_overflow_is_a_scored_truncation(tiny_backend):
    """The stand-in server allows the first turns, then refuses the grown transcript with vLLM's 400."""
    question = load_tasks(["nq"], "dev")[0].question
    first = tiny_backend.count_prompt_tokens(get_prompt_template("search-r1").render(question))
    with OpenAICompatibleServer(tiny_backend, model_name="tiny", max_model_len=first + 16 + 60) as server:
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            executor=f"{server.spec}?max_new_tokens=16&temperature=0",
            benchmarks=("nq",),
            split="dev",
            max_turns=20,
            action_mode="text",
        )
        try:
            result = _run_passes(env, task_id=load_tasks(["nq"], "dev")[0].id)
        finally:
            env.close()
    _assert_context_truncation(*result[:4])
    assert result[3]["executor_turns"] >= 2  # some turns fitted before the transcript outgrew the context


def test_overflow_during_reset_is_reported_by_the_first_step(tiny_backend):
    with OpenAICompatibleServer(tiny_backend, model_name="tiny", max_model_len=32) as server:
        env = gym.make(
            "steer_envs/SearchVerification-v0",
            executor=f"{server.spec}?max_new_tokens=8",
            benchmarks=("nq",),
            split="dev",
            action_mode="text",
        )
        try:
            reward, terminated, truncated, info, steps = _run_passes(env)
            assert steps == 1
            _assert_context_truncation(reward, terminated, truncated, info)
            with pytest.raises(Exception, match="episode has ended"):
                env.step("pass")
        finally:
            env.close()


def test_hf_executor_overflow_is_a_scored_truncation(tiny_model_dir):
    """A tiny model with a 256-token context: the prompt fits, the grown transcript does not."""
    spec = f"hf:{tiny_model_dir}?max_new_tokens=16&temperature=0&max_context=400&chat_template=off"
    env = gym.make(
        "steer_envs/SearchSteering-v0", executor=spec, benchmarks=("nq",), split="dev", max_turns=30, action_mode="text"
    )
    try:
        result = _run_passes(env, seed=1)
        _assert_context_truncation(*result[:4])
        assert result[3]["executor_turns"] >= 2
        again = env.unwrapped.fork()  # the truncation travels with the state
        assert again.executor.truncation == CONTEXT_TRUNCATION
    finally:
        env.close()


def test_guided_search_learner_overflow_ends_as_a_scored_truncation():
    class Overflowing:
        name = "overflowing"

        def reset(self, seed):
            self.steps = 0

        def act(self, observation, info):
            self.steps += 1
            if self.steps > 1:
                raise ContextOverflowError("learner: this model's maximum context length is 64 tokens")
            return "<search> who wrote it </search>"

    env = gym.make("steer_envs/GuidedSearch-v0", benchmarks=("nq",), split="train", action_mode="text")
    try:
        total, decisions, info = play_episode(env, Overflowing(), seed=3)
    finally:
        env.close()
    assert decisions == 1 and total == 0.0 and info["turns"] == 1
    _assert_context_truncation(total, False, True, info)
    assert info["truncation_detail"].startswith("learner:")


class Rambler:
    """A scripted model behind the stand-in server: it answers the questions it knows at once and rambles (an invalid
    action, a long one) on the others, so their transcripts outgrow the server's ``max_model_len``. Words are its
    tokens."""

    name = "rambler"
    context_length = None

    def __init__(self, answers: dict[str, str]):
        self.answers = answers
        self.lock = threading.Lock()

    def count_prompt_tokens(self, prompt: str) -> int:
        return len(prompt.split())

    def generate(self, prompts, config: GenerationConfig):
        out = []
        for prompt in prompts:
            known = next((a for q, a in self.answers.items() if q in prompt), None)
            reply = f"<answer> {known} </answer>" if known else "I wonder about many things today " * 20
            text, stop = truncate_at_stop(reply, config.stop)
            out.append(Generation(text, len(text.split()), "stop" if stop else "length", stop))
        return out


@pytest.mark.slow
def test_harness_keeps_context_truncations_in_the_mean(tmp_path):
    """The bias: half the episodes overflow. Dropped as failures (the old behaviour) the mean would be 100; kept and
    scored as no answer it is 50, and the summary counts them."""
    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate, write_summary
    from benchmarks.harness.stats import macro_mean

    tasks = load_tasks(["nq"], "dev")[:4]
    rambler = Rambler({t.question: t.golden_answers[0] for t in tasks[:2]})
    with OpenAICompatibleServer(rambler, model_name="rambler", max_model_len=400) as server:
        config = EvalConfig(
            executor=f"{server.spec}?max_new_tokens=200&temperature=0&chat_template=off",
            benchmarks=("nq",),
            split="dev",
            limit=4,
            seeds=1,
            max_turns=6,
        )
        folder = RunFolder(tmp_path / "run", config)
        outcome = evaluate(folder, "no_supervision", progress=False, log=lambda _: None)
        summaries, table = write_summary(folder, resamples=50)
    records = {r.task_id: r for r in outcome.records}
    assert len(records) == 4
    for task in tasks[2:]:  # the ramblers: truncated by their context, scored 0, not failed
        r = records[task.id]
        assert r.truncation == CONTEXT_TRUNCATION and not r.failed and r.failure is None and r.f1 == 0.0
    assert all(records[t.id].f1 == 1.0 and records[t.id].truncation is None for t in tasks[:2])
    [summary] = summaries
    assert summary.failed == 0 and summary.dropped_pairs == 0 and summary.context_truncations == 2
    kept = summary.avg_f1
    dropped = 100 * macro_mean([r for r in outcome.records if r.truncation is None], ["nq"])
    assert kept == pytest.approx(50.0) and dropped == pytest.approx(100.0) and kept != dropped
    assert "2 episode(s) ended by a context overflow" in table
