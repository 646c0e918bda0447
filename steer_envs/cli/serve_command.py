"""``steer-envs serve-retriever``: serve the corpus with the Search-R1 / ASearcher retrieval API."""
from __future__ import annotations

import argparse
import sys
import time

from ..retrieval import MAX_K, make_retriever
from ..retrieval.registry import RetrieverContext
from ..retrieval.server import ServerConfig, build_server, is_loopback
from .common import add_data_dir
from .registry import Command, register_command


def _configure(parser: argparse.ArgumentParser) -> None:
    defaults = ServerConfig()
    parser.add_argument("--host", default=defaults.host,
                        help="address to bind (default 127.0.0.1: this machine only; 0.0.0.0 exposes it to the network)")
    parser.add_argument("--port", type=int, default=defaults.port, help="port (default 8000; 0 picks a free one)")
    parser.add_argument("--backend", default="bm25s", help="retriever spec to serve: bm25s (default), lucene, ...")
    parser.add_argument("--topk", type=int, default=defaults.default_topk,
                        help=f"passages per query when a request gives no topk (1..{MAX_K}, default 3)")
    parser.add_argument("--corpus", default=None, help="corpus JSONL(.gz) to serve (default: the data folder's corpus)")
    parser.add_argument("--max-batch", type=int, default=defaults.max_batch, help="most queries in one request")
    parser.add_argument("--max-query-chars", type=int, default=defaults.max_query_chars, help="longest query accepted")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    add_data_dir(parser)


def _run(args: argparse.Namespace) -> int:
    from ..errors import SteerEnvsError

    if not 1 <= args.topk <= MAX_K:
        raise SteerEnvsError(f"--topk must be between 1 and {MAX_K}, got {args.topk}")
    if args.max_batch < 1 or args.max_query_chars < 1:
        raise SteerEnvsError("--max-batch and --max-query-chars must be positive")
    start = time.perf_counter()
    retriever = make_retriever(args.backend, corpus_path=args.corpus, data_dir=args.data_dir)
    corpus = RetrieverContext(args.corpus, args.data_dir).corpus()
    config = ServerConfig(host=args.host, port=args.port, default_topk=args.topk, max_batch=args.max_batch,
                          max_query_chars=args.max_query_chars)
    server = build_server(retriever, corpus, config, verbose=args.verbose)
    if not is_loopback(args.host):
        print(f"warning: listening on {args.host}: anyone who can reach this machine can query the server",
              file=sys.stderr)
    print(f"serving {args.backend} over {len(corpus)} passages at {server.url} "
          f"(POST /retrieve, POST /access, GET /health; ready in {time.perf_counter() - start:.1f}s). Ctrl-C stops.",
          flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


register_command(Command("serve-retriever", "serve the corpus over HTTP (Search-R1 / ASearcher API)", _configure, _run))
