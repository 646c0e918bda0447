"""The one episode module: the record, its JSONL log, the episode loop and the seeds.

The seeds are checked against their formulas, written out here, so a change to any
derivation (which would change saved episodes and numbers) fails a test."""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict

import gymnasium
import numpy as np
import pytest

import steer_envs  # noqa: F401 - registers the ids
from steer_envs.episodes import (
    EpisodeLog,
    EpisodeRecord,
    calibration_seed,
    dev_episode_seed,
    episode_seed,
    play_episode,
    read_episode_log,
    read_records,
    rollout_group_seed,
    row_seed,
    run_episode,
)
from steer_envs.errors import DataFormatError

ENV_ID = "steer_envs/SearchSteering-v0"
#: the fixture data has no recorded thoughts; the simulator says so once per env
pytestmark = pytest.mark.filterwarnings("ignore:the simulator's thought sources")


def _record(task="nq/1", seed=0, method="m", f1=0.5, **kw):
    return EpisodeRecord(
        method=method,
        task_id=task,
        benchmark="nq",
        seed=seed,
        f1=f1,
        em=0.0,
        reward=f1,
        interventions=1,
        executor_turns=3,
        decisions=3,
        **kw,
    )


class _Passer:
    """A policy that never intervenes (so no note is read: the note reader's first fit takes minutes on CPU) and
    keeps the seeds it was reset with and the env it was bound to."""

    name = "passer"

    def __init__(self) -> None:
        self.seeds: list[int | None] = []
        self.bound = None

    def reset(self, seed=None):
        self.seeds.append(seed)

    def bind(self, env):
        self.bound = env

    def act(self, observation, info):
        return 0  # pass


# -- the record and its log ------------------------------------------------------------------------------------------
def test_log_round_trip_keeps_every_field_and_the_line_format(tmp_path):
    path = tmp_path / "episodes" / "m.jsonl"
    path.parent.mkdir()
    records = [
        _record("nq/1", 0, answer="Paris", tokens=17, seconds=0.25),
        _record("nq/2", 1, failure="retriever down", failed=True),
    ]
    log = EpisodeLog(path)
    for r in records:
        log.append(r)
    assert read_episode_log(path) == records == EpisodeLog(path).records == read_records([path])
    # the run-folder line format: sorted keys, every field (the bytes old run folders hold)
    first = path.read_text().splitlines()[0]
    assert first == json.dumps(asdict(records[0]), sort_keys=True)
    assert list(json.loads(first)) == sorted(json.loads(first))
    assert records[0].to_line() == first + "\n"


def test_a_line_written_before_the_move_reads_back(tmp_path):
    """A saved run folder's line (every field of the harness record, no optional one), plus a field a newer version
    might add: it still parses, and the unknown key is ignored."""
    line = (
        '{"answer": null, "benchmark": "nq", "decisions": 2, "em": 1.0, "executor_turns": 2, "f1": 1.0, '
        '"failed": false, "failure": null, "interventions": 0, "method": "no_supervision", "reward": 1.0, '
        '"seconds": 0.0031, "seed": 1, "task_id": "nq/14f398dd79fc", "tokens": 287, "from_the_future": 3}\n'
    )
    path = tmp_path / "old.jsonl"
    path.write_text(line)
    (record,) = read_episode_log(path)
    assert record.key == ("nq/14f398dd79fc", 1, "no_supervision") and record.tokens == 287 and record.em == 1.0


def test_log_repairs_a_torn_last_line_and_resumes(tmp_path):
    path = tmp_path / "m.jsonl"
    log = EpisodeLog(path)
    log.append(_record("t1"))
    with open(path, "a") as fh:
        fh.write('{"method": "m", "task_id": "t2"')  # killed mid-write
    assert [r.task_id for r in read_episode_log(path)] == ["t1"]  # read-only: the torn tail is skipped ...
    assert path.read_text().endswith('"t2"')  # ... and left in place
    again = EpisodeLog(path)  # opening to append repairs it
    assert [r.task_id for r in again.records] == ["t1"] and path.read_text().endswith("\n")
    again.append(_record("t2"))
    again.append(_record("t2"))  # a key already in the log is not written twice
    assert [json.loads(x)["task_id"] for x in path.read_text().splitlines()] == ["t1", "t2"]


@pytest.mark.parametrize(
    "bad, why",
    [
        ("not json at all\n", "not a valid JSON episode record"),
        ("[1, 2]\n", "expected a JSON object"),
        ('{"method": "m", "task_id": "t9"}\n', "misses field(s) benchmark, seed, f1, em, reward"),
    ],
)
def test_a_bad_line_names_the_file_and_line(tmp_path, bad, why):
    path = tmp_path / "m.jsonl"
    path.write_text(_record("t1").to_line() + "\n" + bad + _record("t3").to_line())
    before = path.read_bytes()
    for read in (read_episode_log, EpisodeLog):
        with pytest.raises(DataFormatError) as err:
            read(path)
        message = str(err.value)
        assert f"{path}:3:" in message and why in message and "delete" in message
    assert path.read_bytes() == before  # a bad line is reported, never truncated away with the lines after it


# -- the episode loop --------------------------------------------------------------------------------------------
def _env(data_dir):
    """The real env on the 4-task fixture data (the shared data's BM25 index takes minutes to build)."""
    return gymnasium.make(ENV_ID, split="test", benchmarks=["nq"], data_dir=str(data_dir))


def test_run_episode_is_play_episode_plus_the_record_and_repeats_under_a_seed(mini_data_dir):
    env = _env(mini_data_dir)
    policy = _Passer()
    task = env.unwrapped.tasks[0].id
    seed = episode_seed(task, 0)
    total, decisions, info = play_episode(env, policy, seed, task)
    record = run_episode(env, policy, seed, task, "label", 0)
    again = run_episode(env, policy, seed, task, "label", 0)
    assert record.key == (task, 0, "label") and info["task_id"] == task
    assert policy.seeds == [seed, seed, seed] and policy.bound is env  # reset with the env's seed, bound to it
    assert (record.reward, record.decisions, record.f1, record.interventions) == (
        pytest.approx(total),
        decisions,
        pytest.approx(info["f1"]),
        info["interventions"],
    )
    assert asdict(record) | {"seconds": 0} == asdict(again) | {"seconds": 0}
    # no task, label or seed index: the env's pick under the seed (the same each time), the policy's name
    picked = env.reset(seed=seed)[1]["task_id"]
    default = run_episode(env, policy, seed)
    assert default.method == "passer" and default.seed == seed and default.task_id == picked


# -- the seeds: equal to the derivations the old copies computed inline --------------------------------------------
def test_seeds_equal_the_old_derivations():
    tasks = [f"nq/{i:04x}" for i in range(40)] + ["hotpotqa/5a8b57f25542995d1e6f1371", "musique/2hop__1"]
    for t in tasks:
        for s in range(4):
            # steer_envs/episodes.py:episode_seed
            assert episode_seed(t, s) == zlib.crc32(f"{t}#{s}".encode()) & 0x7FFFFFFF
            # baselines/fixed_rule.py:_dev_seeds
            assert dev_episode_seed(t, s) == (zlib.crc32(t.encode()) * 1009 + s) % (2**31 - 1)
        # baselines/handoff.py:coverage_of
        assert calibration_seed(t) == zlib.crc32(t.encode()) & 0x7FFFFFFF
    for seed in (0, 3, 2**31 - 2):
        for i in range(30):
            # steer_envs/integrations/trl.py:episode_seed
            assert row_seed(seed, i) == (seed * 1_000_003 + i) % (2**31 - 1)
            # agents/actguide/evaluate.py:evaluate
            assert rollout_group_seed(seed, i) == int(np.random.default_rng([seed, i]).integers(2**31 - 1))
    # a few pinned values: the formulas above could drift together with the code
    assert episode_seed("nq/1", 0) == 33976820 and row_seed(3, 4) == 3000013
    assert len({episode_seed(t, s) for t in tasks for s in range(4)}) == 4 * len(tasks)


# -- one name each: the harness's names are these objects; the removed second names are gone -----------------------
def test_the_harness_names_are_these_objects():
    """The harness runs episodes with this module's loop, and its former re-export module is gone."""
    import importlib

    from benchmarks.harness.runner import run_episode as harness_run

    assert harness_run is run_episode
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("benchmarks.harness.records")


def test_the_removed_second_names_are_gone():
    import agents.actguide.evaluate as actguide_evaluate
    import agents.base as agents_base
    import steer_envs.integrations.trl as trl

    for module, name in [
        (actguide_evaluate, "EvalEpisode"),
        (trl, "episode_seed"),
        (agents_base, "EpisodeRecord"),
        (agents_base, "run_episode"),
        (agents_base, "play_episode"),
    ]:
        assert not hasattr(module, name), f"{module.__name__}.{name}"
    record = EpisodeRecord(
        method="p",
        task_id="nq/1",
        benchmark="nq",
        seed=7,
        f1=1.0,
        em=1.0,
        reward=1.0,
        interventions=0,
        executor_turns=2,
        decisions=2,
    )
    assert not hasattr(record, "policy") and record.key == ("nq/1", 7, "p")
