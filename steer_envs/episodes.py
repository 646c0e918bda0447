"""The one home of an episode's outcome: the record, its JSONL log, the episode loop and the episode seeds.

Why one module: the evaluation harness, the ACTGUIDE evaluation and the baselines' calibration loops all run
"a policy on an env for one episode" and keep "what it produced": one record class and one loop for all of them.
They speak :class:`EpisodeRecord`, write and read it with :class:`EpisodeLog`, run it with :func:`play_episode` /
:func:`run_episode`, and take their env seeds from the functions below, so two of them cannot differ in what an
episode's outcome is. It lives in ``steer_envs`` (the bottom floor) so that ``agents``, ``baselines`` and
``benchmarks`` can all import it without importing each other.

The on-disk format is the harness's ``RUN_DIR/episodes/<label>.jsonl``: one ``json.dumps(asdict(record),
sort_keys=True)`` line per finished (task, seed) episode, appended and flushed as it finishes (fsync'ed within a
second), so a killed run loses at most the episodes in flight and a rerun skips everything already done. Do not add
fields to :class:`EpisodeRecord` lightly: every line of every new run folder would change.

Seeds. :func:`episode_seed` is the evaluation protocol's env seed of a (task, seed index) pair. The other seed
functions are *different* derivations kept under names that say where they are used, because changing any of
them would change the episodes (and the saved numbers) of the code that uses it.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Iterable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from .errors import DataFormatError, ServiceError
from .failures import episode_failed, failure_source
from .llm.base import ContextOverflowError
from .policy_counters import counter_change, policy_counters

#: 2**31 - 1: every derived seed is a non-negative int32 (what ``gymnasium``'s ``reset(seed=...)`` and torch take)
_SEED_MOD = 2**31 - 1


@dataclass(frozen=True)
class EpisodeRecord:
    """The outcome of one method on one task under one seed (scores in [0, 1]).

    ``seed`` is the *seed index* of the protocol (0, 1, ...), not the env seed: the env seed is
    :func:`episode_seed` of ``(task_id, seed)``, the same for every method, which is what pairs them."""

    method: str
    task_id: str
    benchmark: str
    seed: int
    f1: float
    em: float
    reward: float
    interventions: int = 0
    executor_turns: int = 0
    decisions: int = 0
    tokens: int = 0
    answer: str | None = None
    seconds: float = 0.0
    #: why the episode ended early, when a service it needed failed after retries (``info["failure"]``)
    failure: str | None = None
    #: a service failure truncated the episode (``steer_envs.failures``): it has no outcome, so the summaries
    #: count it and leave it (and its pair in every other method) out of the means and intervals
    failed: bool = False
    #: ``"context"`` when the agent outgrew its model's context (``info["truncation"]``): a scored outcome (F1 0)
    #: that stays in every mean, unlike ``failed``; the summaries count these episodes
    truncation: str | None = None
    #: each decision's action, compactly (``info["action"]``: ``"pass"``, a note's name, ``"note: <text>"``), so a
    #: reader sees what the policy did (``steer-envs report RUN --actions``); empty for envs that do not say
    actions: tuple[str, ...] = ()
    #: what the policy counted during this episode that the outcome does not show (``policy.counters()``'s change:
    #: unparseable outputs, elided prompts, ...; :mod:`steer_envs.policy_counters`); empty when nothing happened
    counters: dict[str, int] = field(default_factory=dict, hash=False)

    @property
    def key(self) -> tuple[str, int, str]:
        """What makes a record unique in a log: ``(task_id, seed, method)``."""
        return (self.task_id, self.seed, self.method)

    @staticmethod
    def from_dict(data: dict) -> EpisodeRecord:
        """A record from one parsed JSONL line; unknown keys are ignored (lines written by a newer version)."""
        names = {f.name for f in fields(EpisodeRecord)}
        kept = {k: v for k, v in data.items() if k in names}
        if "actions" in kept:
            kept["actions"] = tuple(kept["actions"])  # a JSON list; records compare equal to fresh ones
        return EpisodeRecord(**kept)

    def to_line(self) -> str:
        """The record's line in an episode log (with its newline). The one serialisation: sorted keys, every
        field, so a log written by any caller is byte-identical to one the harness writes."""
        # the fields by name, not ``asdict`` (same JSON: they are plain values; asdict deep-copies each, a tenth
        # of a millisecond a record in the evaluation's one writing thread)
        return json.dumps({name: getattr(self, name) for name in _FIELD_NAMES}, sort_keys=True) + "\n"


_FIELD_NAMES = tuple(f.name for f in fields(EpisodeRecord))
_REQUIRED = tuple(  # the fields without a default
    f.name for f in fields(EpisodeRecord) if f.default is MISSING and f.default_factory is MISSING
)


def parse_episode_line(line: bytes | str, path: str | os.PathLike, lineno: int) -> EpisodeRecord:
    """One complete line of an episode log as a record; a bad line raises :class:`DataFormatError` naming the
    file and the line (1-based) and saying how to fix it."""
    where = f"{path}:{lineno}"
    fix = "fix or delete that line (or delete the file to rerun the method's episodes)"
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise DataFormatError(f"{where}: not a valid JSON episode record ({exc}); {fix}") from None
    if not isinstance(data, dict):
        raise DataFormatError(f"{where}: expected a JSON object (an episode record), got {type(data).__name__}; {fix}")
    missing = [name for name in _REQUIRED if name not in data]
    if missing:
        raise DataFormatError(f"{where}: episode record misses field(s) {', '.join(missing)}; {fix}")
    return EpisodeRecord.from_dict(data)


def _scan(path: Path) -> tuple[list[EpisodeRecord], int, int]:
    """``(records, bytes of complete lines, total bytes)``. A last line without its newline is a torn write (the
    process died mid-line) and is left out; blank lines are skipped; any other bad line raises."""
    if not path.is_file():
        return [], 0, 0
    raw = path.read_bytes()
    good_end, records = 0, []
    for lineno, line in enumerate(raw.splitlines(keepends=True), start=1):
        if not line.endswith(b"\n"):
            break  # torn write: only ever the last line
        if line.strip():
            records.append(parse_episode_line(line, path, lineno))
        good_end += len(line)
    return records, good_end, len(raw)


def read_episode_log(path: str | os.PathLike) -> list[EpisodeRecord]:
    """The records of one episode log, read only (a torn last line is ignored, not repaired); no file: ``[]``."""
    return _scan(Path(path))[0]


#: the longest a written episode line waits for its fsync
FSYNC_EVERY_S = 1.0


class EpisodeLog:
    """Append-only JSONL of :class:`EpisodeRecord` (the writer and the resuming reader).

    Opening it repairs a torn last line (a kill mid-write) by truncating the file to its complete lines, so the
    next append starts on a fresh line; a complete line that is not a record raises :class:`DataFormatError`
    (naming the file and line) instead of silently dropping it and everything after it."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.records: list[EpisodeRecord] = self._load()
        self._done = {r.key for r in self.records}
        self._file: Any = None  # opened on the first append, kept open for the next ones
        self._next_sync = 0.0

    def done(self, task_id: str, seed: int, method: str) -> bool:
        return (task_id, seed, method) in self._done

    def append(self, record: EpisodeRecord) -> None:
        """Write one record, flushed to the operating system at once (a killed process loses no written line) and
        fsync'ed at most :data:`FSYNC_EVERY_S` later (what a crashed machine can lose); a record whose key is
        already in the log is not written."""
        if record.key in self._done:
            return
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open across appends
        self._file.write(record.to_line())
        self._file.flush()
        if time.monotonic() >= self._next_sync:
            self.sync()
        self.records.append(record)
        self._done.add(record.key)

    def sync(self) -> None:
        """fsync what was written. Why not per record: an fsync waits for the disk, and an evaluation of hundreds of
        episodes a second would spend its time there, with every episode in flight held until the disk answers."""
        if self._file is not None:
            os.fsync(self._file.fileno())
        self._next_sync = time.monotonic() + FSYNC_EVERY_S

    def close(self) -> None:
        """fsync and close the file (appending afterwards opens it again)."""
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _load(self) -> list[EpisodeRecord]:
        records, good_end, size = _scan(self.path)
        if good_end != size:
            with open(self.path, "r+b") as fh:
                fh.truncate(good_end)
        return records


def read_records(paths: Iterable[str | os.PathLike]) -> list[EpisodeRecord]:
    """The records of several episode logs, in order (each opened as :class:`EpisodeLog`, repairing a torn tail)."""
    out: list[EpisodeRecord] = []
    for path in paths:
        out.extend(EpisodeLog(path).records)
    return out


def play_episode(
    env: Any, policy: Any, seed: int, task_id: str | None = None, actions: list[str] | None = None
) -> tuple[float, int, dict]:
    """The bare episode loop: ``(return, decisions, final info)``. Env and policy are reset with the same seed;
    ``actions``, when given, receives each step's ``info["action"]`` (envs that say what a step did).

    A policy that must look ahead in the environment itself (the lookahead oracle forks it) declares
    ``bind(env)``; it is called once per episode, before the first action. A policy that *is* the searching agent
    (GuidedSearch-v0's learner) and raises :class:`~steer_envs.llm.base.ContextOverflowError` because its prompt
    outgrew its model's context ends the episode through the env's ``truncate_for_context``: a scored truncation,
    not a crash (envs without that method re-raise: a supervisor's overflow is not the episode's outcome).

    A policy whose own service fails after its retries (a served steerer's model server dies mid-run: a
    :class:`~steer_envs.errors.ServiceError`) ends the episode as a *failure*, as the env does when its executor's
    server fails: ``info`` gets ``failure`` (prefixed ``"policy: "``) and ``failure_source``, so the harness records
    the episode, counts it, and leaves it out of every mean; the run goes on to the next episode."""
    options = {"task_id": task_id} if task_id is not None else None
    observation, info = env.reset(seed=seed, options=options)
    policy.reset(seed)
    bind = getattr(policy, "bind", None)
    if bind is not None:
        bind(env)
    total, decisions = 0.0, 0
    terminated = truncated = False
    while not (terminated or truncated):
        try:
            action = policy.act(observation, info)
        except ContextOverflowError as exc:
            end = getattr(getattr(env, "unwrapped", env), "truncate_for_context", None)
            if end is None:
                raise
            observation, reward, terminated, truncated, info = end(str(exc))
            total += float(reward)
            break
        except ServiceError as exc:  # the policy's own server failed after its retries: no outcome
            info = {**info, "failure": f"policy: {exc}", "failure_source": failure_source(exc)}
            break
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        decisions += 1
        if actions is not None and "action" in info:
            actions.append(str(info["action"]))
    return total, decisions, info


def run_episode(
    env: Any,
    policy: Any,
    seed: int,
    task_id: str | None = None,
    method: str | None = None,
    seed_index: int | None = None,
) -> EpisodeRecord:
    """One episode of ``policy`` on ``task_id`` (None: the env's next task) with env seed ``seed``, as a record.

    ``method`` labels the record (default: ``policy.name``), ``seed_index`` is the protocol's seed index it keeps
    (default: ``seed``). Env and policy share ``seed``, so two methods run on the same ``(task_id, seed)`` see the
    same executor randomness up to their first diverging action (paired comparisons)."""
    start = time.perf_counter()
    actions: list[str] = []
    before = policy_counters(policy)
    total, decisions, info = play_episode(env, policy, seed, task_id, actions)
    counters = counter_change(before, policy_counters(policy))
    return EpisodeRecord(
        method=str(policy.name) if method is None else method,
        task_id=str(info.get("task_id", "")) if task_id is None else task_id,
        benchmark=str(info.get("benchmark", "")),
        seed=seed if seed_index is None else seed_index,
        f1=float(info.get("f1", 0.0)),
        em=float(info.get("em", 0.0)),
        reward=total,
        interventions=int(info.get("interventions", 0)),
        executor_turns=int(info.get("executor_turns", 0)),
        decisions=decisions,
        tokens=int(info.get("tokens", 0)),
        answer=None if info.get("answer") is None else str(info.get("answer")),
        seconds=round(time.perf_counter() - start, 4),
        failure=info.get("failure"),
        failed=episode_failed(info),
        truncation=info.get("truncation"),
        actions=tuple(actions),
        counters=counters,
    )


# --- seeds --------------------------------------------------------------------------------------------------------


def episode_seed(task_id: str, seed_index: int) -> int:
    """The evaluation protocol's env seed of one (task, seed index) pair: identical for every method, so
    comparisons are paired (common random numbers: the executor behaves identically until a supervisor first
    acts). Used by ``steer-envs eval`` and every results page built from its run folders."""
    return zlib.crc32(f"{task_id}#{seed_index}".encode()) & 0x7FFFFFFF


def calibration_seed(task_id: str) -> int:
    """One fixed env seed per task, with no seed index: the hand-off steerer's τ calibration on dev tasks
    (``baselines.handoff.coverage_of``) replays every task under this seed at every bisection step."""
    return zlib.crc32(task_id.encode()) & 0x7FFFFFFF


def dev_episode_seed(task_id: str, index: int) -> int:
    """The env seed of the ``index``-th dev-split episode of ``task_id`` in the method searches that pick an
    operating point before any evaluation (``baselines.fixed_rule.score_rules``): every
    candidate runs on the same ones, and none of them is an evaluation seed of :func:`episode_seed`."""
    return (zlib.crc32(task_id.encode()) * 1009 + index) % _SEED_MOD


def row_seed(seed: int, row: int) -> int:
    """The episode seed of a TRL dataset row (``steer_envs.integrations.trl.task_dataset``): deterministic in
    (``seed``, ``row``), distinct per row, with no task id (a row's task is fixed by the dataset)."""
    return (int(seed) * 1_000_003 + int(row)) % _SEED_MOD


def rollout_group_seed(seed: int, index: int) -> int:
    """The env seed of the ``index``-th task's rollout group in the ACTGUIDE evaluation
    (``agents.actguide.evaluate.evaluate``): a draw of ``numpy``'s generator seeded with ``[seed, index]``."""
    return int(np.random.default_rng([seed, index]).integers(_SEED_MOD))


__all__ = [
    "EpisodeLog",
    "EpisodeRecord",
    "calibration_seed",
    "dev_episode_seed",
    "episode_seed",
    "parse_episode_line",
    "play_episode",
    "read_episode_log",
    "read_records",
    "rollout_group_seed",
    "row_seed",
    "run_episode",
]
