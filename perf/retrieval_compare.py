"""BM25 engines side by side on the shared corpus: bm25s (default), pyserini / Lucene, and rank_bm25.

Run: ``python -m perf.retrieval_compare [--k 5] [--subset 100] [--split test]``. Prints one markdown
table: supporting-passage recall@k (question as the query; test-split tasks that define ``supporting_ids``),
queries per second through ``batch_search``, and index readiness time (``cached`` when the on-disk index was
reused). rank_bm25 scores every document in Python (~0.4 s a query here), so it runs on an evenly spaced subset of
``--subset`` queries; every backend is also scored on that subset so the three are compared on the same queries.
A backend whose package is missing is reported as such, not skipped silently.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from steer_envs.cli.common import add_data_dir, add_protocol_arguments
from steer_envs.data import Corpus, Task, load_corpus, load_tasks
from steer_envs.retrieval import Hit, Retriever
from steer_envs.retrieval.bm25 import BM25sRetriever
from steer_envs.retrieval.evaluation import supporting_hits


class RankBM25Retriever:
    """rank_bm25's ``BM25Okapi`` with the bm25s tokenisation (stemmer + stopwords) and the same k1, b."""

    name = "rank_bm25"

    def __init__(self, corpus: Corpus, tokenizer: BM25sRetriever) -> None:
        import numpy as np
        from rank_bm25 import BM25Okapi

        self._np = np
        self.corpus = corpus
        self._tokenizer = tokenizer
        self.model = BM25Okapi(
            tokenizer._tokenize([p.contents for p in corpus.passages]), k1=tokenizer.config.k1, b=tokenizer.config.b
        )

    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        out = []
        for tokens in self._tokenizer._tokenize(list(queries)):
            scores = self.model.get_scores(tokens)
            top = self._np.argsort(-scores)[:k]
            out.append(
                [
                    Hit(
                        self.corpus.passages[i].id,
                        self.corpus.passages[i].title,
                        self.corpus.passages[i].text,
                        float(scores[i]),
                    )
                    for i in top
                    if scores[i] > 0
                ]
            )
        return out


@dataclass
class BackendRun:
    name: str
    ready_s: float = float("nan")
    cached: bool = False
    queries: int = 0
    recall: float = float("nan")
    qps: float = float("nan")
    subset_recall: float = float("nan")
    note: str = ""


def _bm25s(corpus: Corpus) -> Retriever:
    return BM25sRetriever(corpus)


def _lucene(corpus: Corpus) -> Retriever:
    from steer_envs.retrieval.lucene import LuceneRetriever

    return LuceneRetriever(corpus)


BACKENDS: dict[str, Callable[[Corpus], Retriever]] = {"bm25s": _bm25s, "pyserini (Lucene)": _lucene}


def evenly_spaced(tasks: Sequence[Task], n: int) -> list[Task]:
    if n >= len(tasks):
        return list(tasks)
    step = len(tasks) / n
    return [tasks[int(i * step)] for i in range(n)]


def _timed_hits(retriever: Retriever, tasks: Sequence[Task], k: int) -> tuple[list[bool], float]:
    start = time.perf_counter()
    hits = supporting_hits(retriever, tasks, k)
    return hits, len(tasks) / (time.perf_counter() - start)


def compare(k: int = 5, subset: int = 100, split: str = "test", data_dir: str | None = None) -> list[BackendRun]:
    corpus = load_corpus(data_dir=data_dir)
    tasks = [t for t in load_tasks(split=split, data_dir=data_dir) if t.supporting_ids]
    small = evenly_spaced(tasks, subset)
    runs: list[BackendRun] = []
    bm25s_retriever: BM25sRetriever | None = None
    for name, build in BACKENDS.items():
        run = BackendRun(name)
        start = time.perf_counter()
        try:
            retriever = build(corpus)
        except ImportError as exc:
            run.note = f"not installed ({exc.name})"
            runs.append(run)
            continue
        except Exception as exc:  # e.g. pyserini present but Java missing: report it in the table
            run.note = f"unavailable: {exc}"
            runs.append(run)
            continue
        run.ready_s = time.perf_counter() - start
        run.cached = bool(getattr(retriever, "loaded_from_cache", False))
        build_s = getattr(retriever, "last_build_seconds", None)
        if build_s is not None:
            run.note = f"of which index build {build_s:.1f} s"
        if isinstance(retriever, BM25sRetriever):
            bm25s_retriever = retriever
        retriever.batch_search(["warm up query"], k)
        hits, run.qps = _timed_hits(retriever, tasks, k)
        run.queries, run.recall = len(tasks), sum(hits) / len(hits)
        small_hits = supporting_hits(retriever, small, k)
        run.subset_recall = sum(small_hits) / len(small_hits)
        runs.append(run)
    run = BackendRun("rank_bm25", note=f"on the {len(small)}-query subset only")
    try:
        start = time.perf_counter()
        rank = RankBM25Retriever(corpus, bm25s_retriever or BM25sRetriever(corpus))
        run.ready_s = time.perf_counter() - start
        hits, run.qps = _timed_hits(rank, small, k)
        run.queries, run.recall = len(small), sum(hits) / len(hits)
        run.subset_recall = run.recall
    except ImportError as exc:
        run.note = f"not installed ({exc.name})"
    runs.append(run)
    return runs


def to_markdown(runs: Sequence[BackendRun], k: int, subset: int) -> str:
    lines = [
        f"| backend | queries | recall@{k} | recall@{k} on {subset}-query subset | queries/s | index ready s | note |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in runs:
        ready = f"{r.ready_s:.1f}" + (" (cached)" if r.cached else "")
        lines.append(
            f"| {r.name} | {r.queries} | {r.recall:.3f} | {r.subset_recall:.3f} | {r.qps:.1f} | {ready} | {r.note} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--subset", type=int, default=100, help="queries for rank_bm25 (slow) and the common subset")
    add_protocol_arguments(parser, include=("split",), defaults={"split": "test"})
    add_data_dir(parser)
    args = parser.parse_args(argv)
    runs = compare(args.k, args.subset, args.split, args.data_dir)
    print(f"BM25 engines on the shared corpus, {args.split}-split tasks with supporting passages, question as query\n")
    print(to_markdown(runs, args.k, args.subset))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
