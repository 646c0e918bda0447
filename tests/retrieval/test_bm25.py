"""The default bm25s backend on the real corpus: answers, caching across processes, quality, bad input."""

import os
import subprocess
import sys

import pytest

from steer_envs.data import load_corpus, load_tasks
from steer_envs.errors import SteerEnvsError
from steer_envs.retrieval import Retriever
from steer_envs.retrieval.bm25 import BM25sRetriever
from steer_envs.retrieval.evaluation import supporting_recall


def test_protocol_and_first_nobel_prize(bm25):
    assert isinstance(bm25, Retriever)
    hits = bm25.search("who got the first nobel prize in physics", 3)
    assert len(hits) == 3
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert any("Röntgen" in h.text for h in hits)


def test_batch_equals_single(bm25):
    queries = ["capital of romania", "danube delta", "first nobel prize physics"]
    batch = bm25.batch_search(queries, 4)
    assert [[h.id for h in hs] for hs in batch] == [[h.id for h in bm25.search(q, 4)] for q in queries]


@pytest.mark.parametrize("k", [1, 3, 10])
def test_ranking_is_exactly_bm25s_own_including_ties(bm25, shared_data_dir, k):
    """The fast top-k selection returns what ``bm25s.BM25.retrieve`` returns, ids and scores, on 600 real questions
    (some of which tie inside the top k + 1 and take the fallback)."""
    from steer_envs.retrieval.bm25 import top_k

    questions = [t.question for t in load_tasks(split="dev", data_dir=shared_data_dir)][:600]
    got = bm25.batch_search(questions, k)
    tokens = bm25._tokenize(questions)
    ties = 0
    for query_tokens, hits in zip(tokens, got):
        ids = bm25.model.get_tokens_ids(query_tokens)
        if not ids:
            assert hits == []
            continue
        docs, scores = bm25.model.retrieve([query_tokens], k=k, show_progress=False, n_threads=0)
        expected = [(bm25.corpus.passages[int(d)].id, float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]
        assert [(h.id, h.score) for h in hits] == expected
        ties += top_k(bm25.model.get_scores_from_ids(ids), k) is None
    assert ties > 0  # the tie fallback was exercised


def test_disabled_progress_bars_are_skipped_with_the_same_tokens(bm25, shared_data_dir):
    """The search path's tokeniser hands disabled bars' iterables back (no tqdm built per query); the tokens are
    what bm25s' own bars (shown) give."""
    import bm25s
    from bm25s import tokenization

    questions = [t.question for t in load_tasks(split="dev", data_dir=shared_data_dir)][:200]
    quiet = bm25._tokenize(questions)
    assert getattr(tokenization.tqdm, "skips_disabled", False)
    shown = bm25s.tokenize(
        questions, stopwords=bm25.config.stopwords, stemmer=bm25._stemmer, return_ids=False, show_progress=True
    )
    assert quiet == shown and len(quiet) == 200


def test_query_with_only_unknown_words_returns_nothing(bm25):
    assert bm25.search("zzqxjv qqqzzk", 5) == []


@pytest.mark.parametrize("query,k", [("", 5), ("   ", 5), ("nobel", 0), ("nobel", 1000), (None, 5)])
def test_bad_queries_get_clear_errors(bm25, query, k):
    with pytest.raises(SteerEnvsError):
        bm25.search(query, k)


def test_supporting_recall_at_5_is_at_least_080(bm25, shared_data_dir):
    report = supporting_recall(bm25, load_tasks(split="test", data_dir=shared_data_dir), k=5)
    assert report.n_tasks == 1815
    assert report.overall >= 0.80, report.to_markdown()


def test_index_is_cached_on_disk(mini_data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path / "cache"))
    corpus = load_corpus(data_dir=mini_data_dir)
    first = BM25sRetriever(corpus)
    second = BM25sRetriever(corpus)
    assert not first.loaded_from_cache and second.loaded_from_cache
    assert [h.id for h in first.search("capital", 3)] == [h.id for h in second.search("capital", 3)]


def test_second_process_loads_cached_index(mini_data_dir, tmp_path):
    """Two real CLI processes: the first builds the index, the second loads it (the build is skipped)."""
    env = dict(os.environ, STEER_ENVS_CACHE=str(tmp_path / "cache"), STEER_ENVS_DATA=str(mini_data_dir))
    cmd = [sys.executable, "-m", "steer_envs.cli.main", "search", "capital of romania", "-k", "2"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    assert "index built" in first.stdout
    assert "index loaded from cache" in second.stdout
    assert "Bucharest" in second.stdout
