"""``steer-envs serve-retriever``: serve the corpus with the Search-R1 / ASearcher retrieval API."""

from __future__ import annotations

import argparse
import time

from ..retrieval import MAX_K, make_retriever
from ..retrieval.registry import RetrieverContext
from ..retrieval.server import ServerConfig, build_server
from ..serving import API_KEY_ENV, parse_origins, resolve_api_key, serve_until_stopped, warn_if_exposed
from .common import add_allow_origin, add_data_dir


def configure(parser: argparse.ArgumentParser) -> None:
    defaults = ServerConfig()
    parser.add_argument(
        "--host",
        default=defaults.host,
        help="address to bind (default 127.0.0.1: this machine only; 0.0.0.0 exposes it to the network)",
    )
    parser.add_argument("--port", type=int, default=defaults.port, help="port (default 8000; 0 picks a free one)")
    parser.add_argument("--backend", default="bm25s", help="retriever spec to serve: bm25s (default), lucene, ...")
    parser.add_argument(
        "--topk",
        type=int,
        default=defaults.default_topk,
        help=f"passages per query when a request gives no topk (1..{MAX_K}, default 3)",
    )
    parser.add_argument("--corpus", default=None, help="corpus JSONL(.gz) to serve (default: the data folder's corpus)")
    parser.add_argument("--max-batch", type=int, default=defaults.max_batch, help="most queries in one request")
    parser.add_argument("--max-query-chars", type=int, default=defaults.max_query_chars, help="longest query accepted")
    parser.add_argument(
        "--api-key",
        default=None,
        help=f"require this key on /retrieve and /access (Authorization: Bearer KEY or X-API-Key: KEY); "
        f"default ${API_KEY_ENV}; without one, anyone who reaches the port can query",
    )
    parser.add_argument(
        "--batch-window-ms",
        type=float,
        default=defaults.batch_window_ms,
        help="collect concurrent requests this long into one retriever call (default 0: batch "
        "the requests that arrive while a search runs)",
    )
    parser.add_argument("--no-batching", action="store_true", help="one retriever call per request")
    parser.add_argument(
        "--max-hits",
        type=int,
        default=defaults.max_hits,
        help=f"most queries x topk in one request (default {defaults.max_hits}; more: 413)",
    )
    add_allow_origin(parser)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    add_data_dir(parser)


def run(args: argparse.Namespace) -> int:
    from ..errors import SteerEnvsError

    if not 1 <= args.topk <= MAX_K:
        raise SteerEnvsError(f"--topk must be between 1 and {MAX_K}, got {args.topk}")
    if args.max_batch < 1 or args.max_query_chars < 1:
        raise SteerEnvsError("--max-batch and --max-query-chars must be positive")
    if args.batch_window_ms < 0:
        raise SteerEnvsError(f"--batch-window-ms must be >= 0, got {args.batch_window_ms}")
    api_key = resolve_api_key(args.api_key)
    start = time.perf_counter()
    retriever = make_retriever(args.backend, corpus_path=args.corpus, data_dir=args.data_dir)
    corpus = RetrieverContext(args.corpus, args.data_dir).corpus()
    config = ServerConfig(
        host=args.host,
        port=args.port,
        default_topk=args.topk,
        max_batch=args.max_batch,
        max_query_chars=args.max_query_chars,
        batch_window_ms=args.batch_window_ms,
        batching=not args.no_batching,
        api_key=api_key,
        max_hits=args.max_hits,
        allowed_origins=parse_origins(args.allow_origin),
    )
    server = build_server(retriever, corpus, config, verbose=args.verbose)
    warn_if_exposed(args.host, api_key, "retrieval server")
    print(
        f"serving {args.backend} over {len(corpus)} passages at {server.url} "
        f"(POST /retrieve, POST /access, GET /health, GET /docs{'; API key required' if api_key else ''}; "
        f"ready in {time.perf_counter() - start:.1f}s). Ctrl-C stops.",
        flush=True,
    )
    return serve_until_stopped(server)
