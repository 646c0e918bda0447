"""The pyserini / Lucene backend on the real corpus: answers, agreement with bm25s, the on-disk cache."""

import os

import pytest

pytest.importorskip("pyserini", reason="the lucene extra is not installed (pip install 'steer-envs[lucene]')")

from steer_envs.data import load_corpus, load_tasks  # noqa: E402
from steer_envs.errors import SteerEnvsError  # noqa: E402
from steer_envs.retrieval import Retriever, make_retriever  # noqa: E402
from steer_envs.retrieval.evaluation import supporting_recall  # noqa: E402
from steer_envs.retrieval.lucene import LuceneRetriever, _java_version  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def openai_key_before():
    return os.environ.get("OPENAI_API_KEY")


@pytest.fixture(scope="module")
def lucene(shared_data_dir, openai_key_before):
    return make_retriever("lucene", data_dir=shared_data_dir)


def test_java_21_and_no_leftover_placeholder_key(lucene, openai_key_before):
    assert _java_version(os.environ["JAVA_HOME"]) >= 21
    assert os.environ.get("OPENAI_API_KEY") == openai_key_before


def test_protocol_and_first_nobel_prize(lucene):
    assert isinstance(lucene, Retriever) and lucene.name == "lucene"
    hits = lucene.search("who got the first nobel prize in physics", 3)
    assert len(hits) == 3 and hits[0].score >= hits[1].score >= hits[2].score
    assert all(h.title and h.text for h in hits)
    assert "Nobel Prize in Physics" in hits[0].title


def test_recall_at_5_within_002_of_bm25s(lucene, shared_data_dir):
    tasks = [t for t in load_tasks(split="test", data_dir=shared_data_dir) if t.supporting_ids]
    bm25 = make_retriever("bm25s", data_dir=shared_data_dir)
    lucene_recall = supporting_recall(lucene, tasks, 5).overall
    bm25s_recall = supporting_recall(bm25, tasks, 5).overall
    assert lucene_recall > 0.8 and bm25s_recall > 0.8
    assert abs(lucene_recall - bm25s_recall) <= 0.02, (lucene_recall, bm25s_recall)


def test_top_hits_mostly_agree_with_bm25s(lucene, shared_data_dir):
    tasks = load_tasks("hotpotqa", split="test", data_dir=shared_data_dir)[:100]
    bm25 = make_retriever("bm25s", data_dir=shared_data_dir)
    queries = [t.question for t in tasks]
    overlap = [
        len({h.id for h in a} & {h.id for h in b}) / 5
        for a, b in zip(lucene.batch_search(queries, 5), bm25.batch_search(queries, 5))
    ]
    assert sum(overlap) / len(overlap) > 0.6


def test_index_is_cached_and_reused(lucene, shared_data_dir):
    again = LuceneRetriever(load_corpus(data_dir=shared_data_dir))
    assert again.loaded_from_cache and again.last_build_seconds is None
    assert again.index_dir == lucene.index_dir
    assert [h.id for h in again.search("danube delta", 5)] == [h.id for h in lucene.search("danube delta", 5)]
    by_path = make_retriever(f"lucene:{lucene.index_dir}", data_dir=shared_data_dir, shared=False)
    assert [h.id for h in by_path.search("danube delta", 5)] == [h.id for h in lucene.search("danube delta", 5)]


def test_small_corpus_builds_its_own_index(mini_data_dir):
    retriever = make_retriever("lucene", data_dir=mini_data_dir, shared=False)
    assert retriever.last_build_seconds is not None and not retriever.loaded_from_cache
    corpus = load_corpus(data_dir=mini_data_dir)
    first = corpus.passages[0]
    hits = retriever.search(first.title + " " + " ".join(first.text.split()[:8]), 3)
    assert hits and hits[0].id == first.id


@pytest.mark.parametrize("query,k", [("", 5), ("nobel", 0), (None, 5)])
def test_bad_queries_get_clear_errors(lucene, query, k):
    with pytest.raises(SteerEnvsError):
        lucene.search(query, k)
