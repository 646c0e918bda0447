"""Atomic files for run folders: a checkpoint is written to a temporary file and renamed into place.

A crash (or kill) during a write leaves the previous checkpoint intact, so ``--resume`` always finds a complete
one. JSONL logs are appended line by line and flushed; a torn last line (killed mid-write) is dropped on read.
Checkpoints hold tensors and plain data only (:mod:`steer_envs.checkpoints`): opening one never runs code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from steer_envs.atomic import atomic_write_bytes
from steer_envs.checkpoints import load_checkpoint, save_checkpoint

__all__ = [
    "append_jsonl",
    "atomic_torch_save",
    "atomic_write_bytes",
    "load_checkpoint",
    "read_jsonl",
    "save_checkpoint",
    "truncate_jsonl",
]


def atomic_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` atomically. For tensors-only payloads (state dicts), which load with ``weights_only=True``;
    anything richer goes through :func:`save_checkpoint` (tensors + plain data)."""
    import torch

    atomic_write_bytes(path, lambda fh: torch.save(obj, fh))


def append_jsonl(record: dict[str, Any], path: Path) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


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
