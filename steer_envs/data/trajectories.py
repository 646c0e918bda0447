"""Recorded rollouts of real search agents (``trajectories/<source>.jsonl.gz``).

Rows are joined to tasks by benchmark + whitespace-normalised question. Turn-level parsing of the transcripts
lives with the replay executor; this module only reads rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import unknown_name
from ..paths import resolve_data_dir
from .jsonl import iter_jsonl


@dataclass(frozen=True)
class RecordedRollout:
    """One real rollout: the agent's prompt and its whole generated transcript (documents inline)."""

    source: str
    benchmark: str
    question: str
    golden_answers: tuple[str, ...]
    format: str
    prompt: str
    response: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def normalize_question(question: str) -> str:
    """Join key between rollouts and tasks."""
    return " ".join(question.split()).lower()


def trajectory_files(data_dir: str | os.PathLike | None = None) -> dict[str, Path]:
    """Available rollout sources by name (file stem without ``.jsonl.gz``)."""
    root = resolve_data_dir(data_dir) / "trajectories"
    return {p.name.removesuffix(".jsonl.gz"): p for p in sorted(root.glob("*.jsonl.gz"))}


def load_rollouts(source: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> list[RecordedRollout]:
    """Load the rows of one source: a name from :func:`trajectory_files` or a path to a JSONL file."""
    path = Path(source)
    if not path.is_file():
        files = trajectory_files(data_dir)
        if str(source) not in files:
            raise unknown_name("trajectory source", source, list(files), hint="or pass a path to a .jsonl(.gz) file")
        path = files[str(source)]
    name = path.name.split(".")[0]
    known = {"benchmark", "question", "golden_answers", "format", "prompt", "response"}
    return [
        RecordedRollout(
            source=name,
            benchmark=str(obj.get("benchmark", "custom")),
            question=str(obj["question"]),
            golden_answers=tuple(obj.get("golden_answers") or ()),
            format=str(obj.get("format", "search-r1")),
            prompt=str(obj.get("prompt", "")),
            response=str(obj["response"]),
            meta={k: v for k, v in obj.items() if k not in known},
        )
        for _, obj in iter_jsonl(path, required=("question", "response"))
    ]
