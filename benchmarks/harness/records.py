"""Episode records and their JSONL log: one line per finished (task, seed) episode, appended and flushed as it
finishes, so a killed run loses at most the episode in flight and a rerun skips everything already done."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path


@dataclass(frozen=True)
class EpisodeRecord:
    """The outcome of one method on one task under one seed (scores in [0, 1])."""

    method: str
    task_id: str
    benchmark: str
    seed: int
    f1: float
    em: float
    reward: float
    interventions: int
    executor_turns: int
    decisions: int = 0
    tokens: int = 0
    answer: str | None = None
    seconds: float = 0.0
    #: why the episode ended early, when a service it needed failed after retries (``info["failure"]``)
    failure: str | None = None
    #: a service failure truncated the episode (``steer_envs.failures``): it has no outcome, so the summaries
    #: count it and leave it (and its pair in every other method) out of the means and intervals
    failed: bool = False

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.task_id, self.seed, self.method)

    @staticmethod
    def from_dict(data: dict) -> "EpisodeRecord":
        names = {f.name for f in fields(EpisodeRecord)}
        return EpisodeRecord(**{k: v for k, v in data.items() if k in names})


class EpisodeLog:
    """Append-only JSONL of :class:`EpisodeRecord`. Opening it repairs a torn last line (a kill mid-write)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.records: list[EpisodeRecord] = self._load()
        self._done = {r.key for r in self.records}

    def done(self, task_id: str, seed: int, method: str) -> bool:
        return (task_id, seed, method) in self._done

    def append(self, record: EpisodeRecord) -> None:
        if record.key in self._done:
            return
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(record), sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.records.append(record)
        self._done.add(record.key)

    def _load(self) -> list[EpisodeRecord]:
        if not self.path.is_file():
            return []
        raw = self.path.read_bytes()
        good_end, records = 0, []
        for line in raw.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # torn write: the process died mid-line
            try:
                records.append(EpisodeRecord.from_dict(json.loads(line)))
            except (ValueError, TypeError):
                break
            good_end += len(line)
        if good_end != len(raw):
            with open(self.path, "r+b") as fh:
                fh.truncate(good_end)
        return records


def read_records(paths: Iterable[str | os.PathLike]) -> list[EpisodeRecord]:
    out: list[EpisodeRecord] = []
    for path in paths:
        out.extend(EpisodeLog(path).records)
    return out
