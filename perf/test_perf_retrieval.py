"""Speed of the retrieval backends (pytest-benchmark). Run:
``pytest perf/test_perf_retrieval.py --benchmark-enable`` (timings are disabled by default in pyproject,
so a plain run only checks that each benchmark works). The recall/q/s table is
``python -m perf.retrieval_compare``.
"""

from __future__ import annotations

import pytest

from steer_envs.data import load_corpus, load_tasks
from steer_envs.ids import STEERING_ENV
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
    from perf.retrieval_compare import RankBM25Retriever

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


def _one_by_one(retriever, queries, k):
    return [retriever.search(q, k) for q in queries]


@pytest.mark.parametrize("backend", ["bm25s", "lucene"])
def test_single_vs_batched(benchmark, queries, backend):
    """64 queries one call each, then the same 64 in one batch_search: queries per second of each, side by side."""
    import time

    if backend == "lucene":
        pytest.importorskip("pyserini", reason="the lucene extra is not installed")
    retriever = make_retriever(backend)
    batch = (queries * 2)[:64]
    retriever.batch_search(batch[:4], K)
    start = time.perf_counter()
    singles = _one_by_one(retriever, batch, K)
    single_s = time.perf_counter() - start
    start = time.perf_counter()
    batched = benchmark.pedantic(retriever.batch_search, args=(batch, K), rounds=1, iterations=1)
    batch_s = time.perf_counter() - start
    assert [[h.id for h in r] for r in batched] == [[h.id for h in r] for r in singles]
    benchmark.extra_info.update(
        {
            "backend": backend,
            "queries": len(batch),
            "k": K,
            "single_qps": len(batch) / single_s,
            "batch_qps": len(batch) / batch_s,
            "batch_speedup": single_s / batch_s,
        }
    )


@pytest.mark.parametrize("backend", ["bm25s", "lucene"])
def test_envs_stepped_together(benchmark, backend):
    """8 envs (retrieval cache off) stepped one after the other vs together with their searches batched
    (``retriever="batched:<backend>"``, :func:`steer_envs.retrieval.collective.step_together`)."""
    import time

    import gymnasium as gym

    import steer_envs  # noqa: F401
    from steer_envs.retrieval import cache as retrieval_cache
    from steer_envs.retrieval.collective import step_together

    if backend == "lucene":
        pytest.importorskip("pyserini", reason="the lucene extra is not installed")
    n, steps = 8, 60
    batcher = make_retriever(f"batched:{backend}")

    def play(envs, together):
        for i, env in enumerate(envs):
            env.reset(seed=i)
        rewards = []
        for _ in range(steps):
            results = step_together(envs, [0] * n, batcher) if together else [e.step(0) for e in envs]
            rewards.append([r[1] for r in results])
            for env, r in zip(envs, results):
                if r[2] or r[3]:
                    env.reset()
        return rewards

    retrieval_cache.set_enabled(False)
    try:
        alone = [gym.make(STEERING_ENV, split="test", retriever=backend) for _ in range(n)]
        grouped = [gym.make(STEERING_ENV, split="test", retriever=f"batched:{backend}") for _ in range(n)]
        play(alone, False), play(grouped, True)  # warm-up
        start = time.perf_counter()
        a = play(alone, False)
        alone_s = time.perf_counter() - start
        calls, queries = batcher.calls, batcher.queries
        start = time.perf_counter()
        b = benchmark.pedantic(play, args=(grouped, True), rounds=1, iterations=1)
        together_s = time.perf_counter() - start
    finally:
        retrieval_cache.set_enabled(True)
    assert a == b
    benchmark.extra_info.update(
        {
            "backend": backend,
            "envs": n,
            "steps": steps * n,
            "one_by_one_steps_per_s": steps * n / alone_s,
            "together_steps_per_s": steps * n / together_s,
            "speedup": alone_s / together_s,
            "mean_batch": (batcher.queries - queries) / max(1, batcher.calls - calls),
        }
    )
