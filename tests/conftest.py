"""Shared fixtures: the real shared data (when present) and a tiny data folder built from tests/fixtures."""
from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Keep test caches out of the user's cache unless CI asks to share one (STEER_ENVS_CACHE set)."""
    if "STEER_ENVS_CACHE" not in os.environ:
        os.environ["STEER_ENVS_CACHE"] = str(tmp_path_factory.mktemp("steer_envs_cache"))
    yield


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The real data folder (../shared/data or $STEER_ENVS_DATA)."""
    from steer_envs.paths import resolve_data_dir

    return resolve_data_dir()


def _gzip_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, gzip.open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout)


@pytest.fixture()
def mini_data_dir(tmp_path) -> Path:
    """A data folder in the shared schema with 4 tasks and 6 passages (fast unit tests)."""
    root = tmp_path / "mini_data"
    _gzip_copy(FIXTURES / "mini_tasks.jsonl", root / "tasks" / "nq.jsonl.gz")
    _gzip_copy(FIXTURES / "mini_musique.jsonl", root / "tasks" / "musique.jsonl.gz")
    _gzip_copy(FIXTURES / "mini_corpus.jsonl", root / "corpus" / "passages.jsonl.gz")
    (root / "trajectories").mkdir()
    return root
