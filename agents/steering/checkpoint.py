"""Atomic files for run folders: a checkpoint is written to a temporary file and renamed into place.

A crash (or kill) during a write leaves the previous checkpoint intact, so ``--resume`` always finds a complete
one. JSONL logs are appended line by line and flushed; a torn last line (killed mid-write) is dropped on read.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch


def atomic_write_bytes(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_torch_save(obj: Any, path: Path) -> None:
    atomic_write_bytes(path, lambda fh: torch.save(obj, fh))


def atomic_write_json(obj: Any, path: Path) -> None:
    atomic_write_bytes(path, lambda fh: fh.write(json.dumps(obj, indent=2, sort_keys=True).encode()))


def append_jsonl(record: dict[str, Any], path: Path) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill
    return rows


def truncate_jsonl(path: Path, keep: int) -> None:
    """Keep only the first ``keep`` complete records (drop rows of a round that did not checkpoint)."""
    rows = read_jsonl(path)[:keep]
    atomic_write_bytes(path, lambda fh: fh.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()))
