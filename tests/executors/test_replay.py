"""The replay executor: real recorded rollouts played turn by turn, read-only, deterministic by seed."""

import pickle

import pytest

from steer_envs.data import load_tasks
from steer_envs.errors import SteerEnvsError
from steer_envs.executors import ExecutorError, Intervention, make_executor
from steer_envs.executors.protocol import searched_queries
from steer_envs.executors.replay import ReplayExecutor, load_replay_source, replay_task_ids
from steer_envs.executors.transcript import recorded_queries


@pytest.fixture(scope="module")
def bamboogle_task(shared_data_dir):
    ids = replay_task_ids("r1_searcher_llama", shared_data_dir)
    tasks = load_tasks(data_dir=shared_data_dir, ids=ids[:1])
    return tasks[0]


def play(executor) -> list:
    results = []
    while not executor.done:
        results.append(executor.step())
    return results


@pytest.mark.parametrize("source", ["search_r1_base", "search_r1_instruct", "r1_searcher_qwen", "r1_searcher_llama"])
def test_replays_a_real_rollout_turn_by_turn(source, shared_data_dir):
    ids = replay_task_ids(source, shared_data_dir)
    assert ids, f"no task of the shared data is recorded in {source}"
    task = load_tasks(data_dir=shared_data_dir, ids=ids[:1])[0]
    ex = make_executor(f"replay:{source}", data_dir=str(shared_data_dir), max_turns=20)
    assert isinstance(ex, ReplayExecutor) and ex.interactive is False and ex.deterministic
    ex.reset(task, seed=0)
    results = play(ex)
    rollout = ex.rollout
    assert (
        rollout.question.split() == task.question.split()
        or rollout.question.lower().split() == task.question.lower().split()
    )
    assert ex.transcript == rollout.response  # the whole real transcript, rebuilt turn by turn
    assert ex.prompt == rollout.prompt
    assert ex.stats.searches == sum(r.kind == "search" for r in results) == len(recorded_queries(ex.recorded_turns))
    assert [r.query for r in results if r.kind == "search"] == recorded_queries(ex.recorded_turns)
    if results[-1].kind == "answer":
        assert ex.answer == results[-1].answer and ex.failure is None
    else:
        assert ex.failure is not None


def test_search_r1_queries_agree_with_the_protocol_helper(shared_data_dir):
    """searched_queries() on the replayed transcript sees the same queries (invalid-action replies excluded)."""
    ex = make_executor("replay:search_r1_base", data_dir=str(shared_data_dir))
    source = load_replay_source("search_r1_base", shared_data_dir)
    with_invalid = 0
    for row in range(len(source)):
        if "My previous action is invalid" not in source.rollouts[row].response and row % 25:
            continue
        ex.pinned_row = row
        ex.reset(ex.task_for_row(row))
        play(ex)
        with_invalid += ex.stats.invalid > 0
        assert searched_queries(ex.transcript) == recorded_queries(source.turns(row)), row
    assert with_invalid > 50


def test_seed_picks_among_several_recordings_deterministically(shared_data_dir):
    source = load_replay_source("search_r1_base", shared_data_dir)
    tasks = load_tasks(data_dir=shared_data_dir, ids=replay_task_ids("search_r1_base", shared_data_dir))
    task = next(t for t in tasks if len(source.rows_for(t)) > 1)
    ex = make_executor("replay:search_r1_base", data_dir=str(shared_data_dir))
    rows_by_seed = {}
    for seed in range(12):
        ex.reset(task, seed=seed)
        rows_by_seed[seed] = ex.row
        ex.reset(task, seed=seed)
        assert ex.row == rows_by_seed[seed]
    assert len(set(rows_by_seed.values())) > 1
    assert set(rows_by_seed.values()) <= set(source.rows_for(task))


def test_pinned_row_and_mismatch_error(shared_data_dir, bamboogle_task):
    ex = make_executor("replay:r1_searcher_llama#3", data_dir=str(shared_data_dir))
    ex.reset(ex.task_for_row(3))
    assert ex.row == 3
    play(ex)
    assert ex.transcript == ex.rollout.response
    other = next(
        t
        for t in load_tasks(data_dir=shared_data_dir, ids=replay_task_ids("r1_searcher_llama", shared_data_dir))
        if t.question != ex.rollout.question
    )
    with pytest.raises(ExecutorError, match="replays the question"):
        ex.reset(other)


def test_read_only_intervene_and_fork_raise(shared_data_dir, bamboogle_task):
    ex = make_executor("replay:r1_searcher_llama", data_dir=str(shared_data_dir))
    ex.reset(bamboogle_task, seed=1)
    ex.step()
    with pytest.raises(ExecutorError, match="read-only"):
        ex.intervene(Intervention("note", "search for the founding year first"))
    with pytest.raises(ExecutorError, match="read-only"):
        ex.fork()


def test_state_round_trip_resumes_the_replay(shared_data_dir, bamboogle_task):
    ex = make_executor("replay:r1_searcher_llama", data_dir=str(shared_data_dir))
    ex.reset(bamboogle_task, seed=2)
    ex.step()
    state = pickle.loads(pickle.dumps(ex.get_state()))
    rest = [r.segment for r in play(ex)]
    other = make_executor("replay:r1_searcher_llama", data_dir=str(shared_data_dir))
    other.set_state(state)
    assert [r.segment for r in play(other)] == rest
    assert other.transcript == ex.transcript


def test_unrecorded_task_and_bad_specs_give_clear_errors(shared_data_dir):
    nq_task = load_tasks("nq", data_dir=shared_data_dir)[0]
    ex = make_executor("replay:r1_searcher_llama", data_dir=str(shared_data_dir))
    with pytest.raises(ExecutorError, match="no recorded rollout.*covers benchmarks bamboogle, hotpotqa"):
        ex.reset(nq_task)
    with pytest.raises(SteerEnvsError, match="unknown trajectory source 'nope'"):
        make_executor("replay:nope", data_dir=str(shared_data_dir))
    with pytest.raises(SteerEnvsError, match="out of range"):
        make_executor("replay:r1_searcher_llama#99999", data_dir=str(shared_data_dir))
    with pytest.raises(SteerEnvsError, match="non-negative integer"):
        make_executor("replay:r1_searcher_llama#x", data_dir=str(shared_data_dir))
    with pytest.raises(SteerEnvsError, match="needs a source"):
        make_executor("replay:", data_dir=str(shared_data_dir))


def test_replay_from_a_user_file(tmp_path):
    import json

    path = tmp_path / "mine.jsonl"
    row = {
        "benchmark": "custom",
        "question": "Capital of France?",
        "golden_answers": ["Paris"],
        "format": "search-r1",
        "prompt": "p",
        "response": "<search> capital of france </search>\n\n<information>Doc 1(Title: Paris) Paris "
        "is the capital.</information>\n\n<answer> Paris </answer>",
    }
    path.write_text(json.dumps(row) + "\n")
    ex = make_executor(f"replay:{path}")
    ex.reset(ex.task_for_row(0))
    results = play(ex)
    assert [r.kind for r in results] == ["search", "answer"] and ex.answer == "Paris"


def test_a_replay_env_picks_only_recorded_tasks_by_default(shared_data_dir):
    import gymnasium as gym

    import steer_envs  # noqa: F401

    env = gym.make("steer_envs/SearchSteering-v0", executor="replay:search_r1_base", action_mode="text")
    source = load_replay_source("search_r1_base")
    tasks = env.unwrapped.tasks
    assert tasks and all(source.rows_for(t) for t in tasks)
    assert {t.id for t in tasks} == set(replay_task_ids("search_r1_base", split="train"))
    for seed in range(8):  # any seed resets onto a recorded task and replays it to the end
        obs, info = env.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step("pass")
        assert info["executor_turns"] >= 1
    with pytest.raises(SteerEnvsError, match="supports none of the .* that do"):
        gym.make(
            "steer_envs/SearchSteering-v0", executor="replay:search_r1_base#0", benchmarks=["bamboogle"], split="dev"
        )
