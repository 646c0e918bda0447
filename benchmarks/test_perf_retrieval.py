"""Speed of the retrieval backends (pytest-benchmark). Run:
``pytest benchmarks/test_perf_retrieval.py --benchmark-enable`` (timings are disabled by default in pyproject,
so a plain run only checks that each benchmark works). The recall/q/s table is ``python -m benchmarks.retrieval_compare``.
"""
from __future__ import annotations

import pytest

from steer_envs.data import load_corpus, load_tasks
from steer_envs.retrieval import make_retriever
from steer_envs.retrieval.server import ServerConfig, start_server

K = 5


@pytest.fixture(scope="module")
def queries() -> list[str]:
    return [t.question for t in load_tasks("hotpotqa", split="test")[:50]]


@pytest.fixture(scope="module")
def bm25s():
    return make_retriever("bm25s")


def test_bm25s_batch_of_50(benchmark, bm25s, queries):
    results = benchmark(bm25s.batch_search, queries, K)
    assert len(results) == 50 and all(len(r) == K for r in results)


def test_bm25s_single_query(benchmark, bm25s, queries):
    results = benchmark(bm25s.search, queries[0], K)
    assert len(results) == K


def test_lucene_batch_of_50(benchmark, queries):
    pytest.importorskip("pyserini", reason="the lucene extra is not installed")
    lucene = make_retriever("lucene")
    results = benchmark(lucene.batch_search, queries, K)
    assert len(results) == 50 and all(len(r) == K for r in results)


def test_rank_bm25_batch_of_5(benchmark, bm25s, queries):
    from benchmarks.retrieval_compare import RankBM25Retriever

    rank = RankBM25Retriever(bm25s.corpus, bm25s)
    results = benchmark.pedantic(rank.batch_search, args=(queries[:5], K), rounds=3, iterations=1)
    assert len(results) == 5


def test_http_round_trip_single_query(benchmark, bm25s, queries):
    server, thread = start_server(bm25s, load_corpus(), ServerConfig(port=0))
    try:
        remote = make_retriever(f"http:{server.url}", shared=False)
        results = benchmark(remote.search, queries[0], K)
        assert [h.id for h in results] == [h.id for h in bm25s.search(queries[0], K)]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
