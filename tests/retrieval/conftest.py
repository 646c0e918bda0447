"""Fixtures shared by the retrieval tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bm25(shared_data_dir):
    """The default bm25s retriever over the real corpus (one per test module: the index is large)."""
    from steer_envs.retrieval import make_retriever

    return make_retriever("bm25s", data_dir=shared_data_dir)
