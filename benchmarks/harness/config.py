"""What an evaluation run *is*: the protocol every method in a run folder shares.

Methods are added to a run folder one at a time (``steer-envs eval --method A`` then ``--method B``), so the
protocol (executor, tasks, seeds, turn budget, metric) is fixed per folder and hashed; a method's own options
are part of its label. Two methods are only ever compared on the same task list and seeds.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace

from steer_envs.data import BENCHMARKS, load_tasks
from steer_envs.data.records import Task
from steer_envs.errors import SteerEnvsError
from steer_envs.protocol import EnvProtocol

#: the fields that define the protocol (and therefore the hash); anything else is presentation
PROTOCOL_FIELDS = (
    "executor",
    "benchmarks",
    "split",
    "seeds",
    "limit",
    "max_turns",
    "metric",
    "intervention_cost",
    "task_ids_sha",
    "skip",
)


@dataclass(kw_only=True)
class EvalConfig(EnvProtocol):
    """The evaluation protocol of one run folder.

    ``limit`` takes the first ``limit`` tasks of each benchmark in file order (``0``: all), so a small run is a
    prefix of the full one. ``skip`` first passes over that many tasks of each benchmark: tasks ``skip + 1`` to
    ``skip + limit``. Why: a method fixed after looks at the first tasks of a split can be confirmed on tasks of the
    same split that no look has used (``--skip 40`` after runs with ``--limit 40``). A benchmark with no task left
    after the skip (bamboogle has 36 test tasks) has no episodes; it stays in ``benchmarks``, so methods that train
    on the benchmarks' train splits train as in the first run, and the averages are over the benchmarks with
    episodes (the setting card's task counts show which). ``task_ids_sha`` pins the resolved task list, so a change
    of the data is detected.
    """

    #: executor, benchmarks, split, max_turns, metric, intervention_cost, data_dir (the env protocol every method
    #: of the run shares, from :class:`~steer_envs.EnvProtocol`): all seven benchmarks on test unless set
    benchmarks: tuple[str, ...] | None = BENCHMARKS
    split: str = "test"
    seeds: int = 3
    limit: int = 0
    task_ids_sha: str = ""
    skip: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.benchmarks is None:
            self.benchmarks = BENCHMARKS
        if self.seeds < 1:
            raise SteerEnvsError(f"--seeds must be at least 1, got {self.seeds}")
        if self.limit < 0:
            raise SteerEnvsError(f"--limit must be 0 (all tasks) or positive, got {self.limit}")
        if self.skip < 0:
            raise SteerEnvsError(f"--skip must be 0 (start at the first task) or positive, got {self.skip}")
        if self.max_turns < 1:
            raise SteerEnvsError(f"--max-turns must be at least 1, got {self.max_turns}")

    def tasks(self) -> list[Task]:
        """The task list, benchmark by benchmark, ``limit`` per benchmark (deterministic)."""
        chosen: list[Task] = []
        for bench in self.benchmarks:
            tasks = load_tasks(bench, self.split, data_dir=self.data_dir)[self.skip :]
            chosen.extend(tasks[: self.limit] if self.limit else tasks)
        if not chosen and self.skip:
            raise SteerEnvsError(
                f"--skip {self.skip} leaves no {self.split} task in benchmarks "
                f"{list(self.benchmarks)}: skip fewer tasks"
            )
        if not chosen:
            raise SteerEnvsError(f"no tasks in benchmarks {list(self.benchmarks)} / split {self.split!r}")
        return chosen

    def resolved(self) -> EvalConfig:
        """A copy with ``task_ids_sha`` filled in from the actual task list."""
        ids = "\n".join(t.id for t in self.tasks())
        return replace(
            self, benchmarks=tuple(self.benchmarks), task_ids_sha=hashlib.sha256(ids.encode()).hexdigest()[:16]
        )

    def protocol(self) -> dict:
        """Every protocol field with its value: what is hashed and stored, and what two configs compare."""
        data = asdict(self)
        data["benchmarks"] = list(self.benchmarks or ())
        return {k: data[k] for k in PROTOCOL_FIELDS}

    def config_hash(self) -> str:
        blob = json.dumps(self.protocol(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_json(self) -> dict:
        return {**self.protocol(), "data_dir": self.data_dir, "hash": self.config_hash()}

    @staticmethod
    def from_json(data: dict) -> EvalConfig:
        fields = {k: data[k] for k in PROTOCOL_FIELDS if k in data}
        fields["benchmarks"] = tuple(fields.get("benchmarks", BENCHMARKS))
        return EvalConfig(**fields, data_dir=data.get("data_dir"))
