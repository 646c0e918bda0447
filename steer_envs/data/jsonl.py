"""Line-numbered JSONL reading: a malformed line raises an error naming the file and the line."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import DataFormatError, DataNotFoundError


def open_text(path: str | os.PathLike):
    """Open a plain or gzipped text file for reading (by suffix)."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"file {str(path)!r} does not exist")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def iter_jsonl(path: str | os.PathLike, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; check that ``required`` keys are present."""
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise DataFormatError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            missing = [key for key in required if key not in obj]
            if missing:
                raise DataFormatError(f"{path}:{lineno}: missing required field(s) {', '.join(missing)}")
            yield lineno, obj
