"""``steer-envs data info`` and ``steer-envs search``."""

from __future__ import annotations

import argparse
import gzip
import time
from collections import Counter

from ..data import BENCHMARKS, SPLITS, load_corpus, load_tasks, trajectory_files
from ..paths import resolve_data_dir
from ..retrieval import MAX_K, make_retriever
from ..retrieval.evaluation import supporting_recall
from .common import add_data_dir, add_protocol_arguments


def configure_data(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="data_command", required=True, metavar="{info}")
    info = sub.add_parser("info", help="counts per benchmark and split, corpus size, trajectory files")
    add_data_dir(info)


def run_data(args: argparse.Namespace) -> int:
    root = resolve_data_dir(args.data_dir)
    # everything is read before anything is printed: a broken folder gives one clear error, not half a table
    by_benchmark = {bench: load_tasks(bench, data_dir=root) for bench in BENCHMARKS}
    corpus = load_corpus(data_dir=root)
    trajectories = {}
    for name, path in trajectory_files(root).items():
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            trajectories[name] = (path, sum(1 for line in fh if line.strip()))
    print(f"data folder: {root}")
    header = f"{'benchmark':<17}" + "".join(f"{s:>7}" for s in SPLITS) + f"{'total':>7}{'answerable':>12}"
    print(header)
    print("-" * len(header))
    grand: Counter = Counter()
    for bench, tasks in by_benchmark.items():
        counts = Counter(t.split for t in tasks)
        answerable = sum(t.answerable_in_corpus for t in tasks)
        grand.update(counts)
        grand["answerable"] += answerable
        print(f"{bench:<17}" + "".join(f"{counts[s]:>7}" for s in SPLITS) + f"{len(tasks):>7}{answerable:>12}")
    print(
        f"{'all':<17}" + "".join(f"{grand[s]:>7}" for s in SPLITS) + f"{sum(grand[s] for s in SPLITS):>7}"
        f"{grand['answerable']:>12}"
    )
    print(f"\ncorpus: {len(corpus)} passages ({corpus.path})")
    print("trajectories:")
    for name, (path, rows) in trajectories.items():
        print(f"  {name:<22}{rows:>7} rows  {path.name}")
    return 0


def configure_search(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="+", help="the search query (words are joined with spaces)")
    parser.add_argument("-k", type=int, default=5, help=f"number of passages to show (1..{MAX_K}, default 5)")
    parser.add_argument("--retriever", default="bm25s", help="retriever spec (default bm25s)")
    parser.add_argument("--width", type=int, default=0, help="characters of passage text to show (0: all)")
    add_data_dir(parser)


def run_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    start = time.perf_counter()
    retriever = make_retriever(args.retriever, data_dir=args.data_dir)
    ready = time.perf_counter()
    hits = retriever.search(query, args.k)
    done = time.perf_counter()
    source = "loaded from cache" if getattr(retriever, "loaded_from_cache", False) else "built"
    print(f"query: {query!r}   index {source} in {ready - start:.2f}s, search {1000 * (done - ready):.1f} ms")
    if not hits:
        print("no passage matches any word of the query")
    for rank, hit in enumerate(hits, 1):
        text = hit.text if not args.width or len(hit.text) <= args.width else hit.text[: args.width] + "..."
        print(f"\n{rank}. [{hit.id}] {hit.title.strip(chr(34))}  (score {hit.score:.3f})\n   {text}")
    return 0


def configure_recall(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--retriever", default="bm25s", help="retriever spec (default bm25s)")
    parser.add_argument("-k", type=int, default=5, help="cut-off (default 5)")
    add_protocol_arguments(parser, include=("split",), defaults={"split": "test"})
    add_data_dir(parser)


def run_recall(args: argparse.Namespace) -> int:
    tasks = load_tasks(split=args.split, data_dir=args.data_dir)
    retriever = make_retriever(args.retriever, data_dir=args.data_dir)
    start = time.perf_counter()
    report = supporting_recall(retriever, tasks, args.k)
    elapsed = time.perf_counter() - start
    print(f"supporting-passage recall@{args.k}, {args.split} split, question as query, retriever {args.retriever}")
    print(report.to_markdown())
    print(f"\n{report.n_tasks} queries in {elapsed:.2f}s ({report.n_tasks / elapsed:.0f} queries/s, batched)")
    return 0
