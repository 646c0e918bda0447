"""Where the data and the caches live.

The data folder is resolved in a fixed order so that scripts, tests and CI all agree:
an explicit argument (the CLI's ``--data-dir``), then ``$STEER_ENVS_DATA``, then ``../shared/data`` beside the
repository root (the layout of a development checkout). Derived files (search indexes, converted models) go to a
cache folder, never into the data folder, which is treated as read-only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .errors import DataNotFoundError

DATA_ENV_VAR = "STEER_ENVS_DATA"
CACHE_ENV_VAR = "STEER_ENVS_CACHE"
REPO_ROOT = Path(__file__).resolve().parent.parent


def default_data_candidates() -> list[Path]:
    """Folders tried when nothing is given explicitly (in order)."""
    return [REPO_ROOT.parent / "shared" / "data"]


def _looks_like_data(path: Path) -> bool:
    return (path / "tasks").is_dir() or (path / "corpus").is_dir()


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Return the data folder, or raise a :class:`DataNotFoundError` naming every way to set it."""
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.is_dir() or not _looks_like_data(path):
            what = "does not exist" if not path.is_dir() else "has neither tasks/ nor corpus/ in it"
            raise DataNotFoundError(
                f"data folder {str(path)!r} (from --data-dir / data_dir=) {what}; "
                f"pass the folder that holds tasks/, corpus/ and trajectories/"
            )
        return path.resolve()
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir() or not _looks_like_data(path):
            what = "is not a folder" if not path.is_dir() else "has neither tasks/ nor corpus/ in it"
            raise DataNotFoundError(
                f"${DATA_ENV_VAR}={env!r} {what}; point it at the folder that holds tasks/ and corpus/ "
                f"(tasks/<benchmark>.jsonl.gz, corpus/passages.jsonl.gz)"
            )
        return path.resolve()
    for candidate in default_data_candidates():
        if (candidate / "tasks").is_dir():
            return candidate.resolve()
    raise DataNotFoundError(
        "no data folder found: pass --data-dir DIR (Python: data_dir=DIR) or set "
        f"${DATA_ENV_VAR}=DIR, where DIR holds tasks/<benchmark>.jsonl.gz and corpus/passages.jsonl.gz "
        f"(looked for {', '.join(str(c) for c in default_data_candidates())})"
    )


def cache_dir(*parts: str) -> Path:
    """A user cache folder (``$STEER_ENVS_CACHE``, else ``$XDG_CACHE_HOME/steer_envs``), created on demand."""
    root = os.environ.get(CACHE_ENV_VAR)
    if root:
        base = Path(root).expanduser()
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "steer_envs"
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_fingerprint(path: str | os.PathLike, extra: str = "") -> str:
    """A short content hash of a file (plus an optional salt), used to key caches derived from it."""
    digest = hashlib.sha256(extra.encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
