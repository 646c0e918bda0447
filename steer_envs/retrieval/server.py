"""A retrieval server speaking the Search-R1 / ASearcher HTTP API, over any :class:`Retriever`.

Why: search agents trained with Search-R1 or ASearcher talk to a retrieval *server*; serving our corpus with
the same API lets those agents (and our ``http:`` backend, and vectorised env workers in other processes) share
one index. Endpoints, as in Search-R1's ``retrieval_server.py`` and ASearcher's ``local_retrieval_server.py``:

* ``POST /retrieve`` ``{"queries": [...], "topk": k, "return_scores": bool}`` ->
  ``{"result": [[{"document": {"id", "title", "text", "contents", "url"}, "score": s}, ...], ...]}``;
  without ``return_scores`` each list holds the documents alone (ASearcher reads ``contents`` and ``url``).
* ``POST /access`` ``{"urls": [...]}`` -> ``{"result": [page or null, ...]}`` (ASearcher's page access): a url
  resolves when it is a passage id or names a Wikipedia title of the corpus (``.../wiki/Title``); the page is
  ``{"url", "title", "contents", "ids"}`` with all of that title's passages; anything else gives ``null``.
* ``GET /health`` -> ``{"status": "ok", "retriever", "passages"}``.

Standard library only (``http.server.ThreadingHTTPServer``): no extra dependency, binds to loopback unless told
otherwise. Requests are bounded (body size, batch size, query length): 413 when too large, 422 with a
``{"detail": message}`` body for malformed JSON or wrong fields, like FastAPI's validation errors.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

from ..data.corpus import Corpus
from ..errors import SteerEnvsError
from .base import MAX_K, Hit, Retriever

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
PAGE_URL_PREFIX = "https://en.wikipedia.org/wiki/"


@dataclass(frozen=True)
class ServerConfig:
    """Limits and defaults. ``default_topk`` answers requests that omit ``topk`` (Search-R1's ``--topk``)."""

    host: str = "127.0.0.1"
    port: int = 8000
    default_topk: int = 3
    max_batch: int = 512
    max_query_chars: int = 4096
    max_body_bytes: int = 4 * 1024 * 1024
    max_urls: int = 256


class RequestError(SteerEnvsError):
    """A client mistake, answered with ``status`` and ``{"detail": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def page_url(title: str) -> str:
    return PAGE_URL_PREFIX + title.strip('"').replace(" ", "_")


def document_json(hit: Hit) -> dict[str, Any]:
    """A hit as Search-R1's corpus row (``id``, ``contents``) plus ASearcher's ``title``/``text``/``url``."""
    return {"id": hit.id, "title": hit.title, "text": hit.text, "contents": hit.contents, "url": page_url(hit.title)}


class RetrievalService:
    """Validation and answers, independent of HTTP (so it is testable without sockets)."""

    def __init__(self, retriever: Retriever, corpus: Corpus | None = None, config: ServerConfig | None = None) -> None:
        self.retriever = retriever
        self.corpus = corpus
        self.config = config or ServerConfig()
        self._titles: dict[str, list[int]] | None = None
        self._titles_lower: dict[str, list[int]] | None = None
        self._titles_lock = threading.Lock()

    # -- /retrieve ------------------------------------------------------------------------------------------
    def retrieve(self, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict):
            raise RequestError(422, 'the body must be a JSON object like {"queries": ["..."], "topk": 3}')
        unknown = set(payload) - {"queries", "topk", "return_scores"}
        if unknown:
            raise RequestError(422, f"unknown field(s) {sorted(unknown)}; allowed: queries, topk, return_scores")
        queries = payload.get("queries")
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise RequestError(422, "'queries' must be a list of strings")
        if len(queries) > self.config.max_batch:
            raise RequestError(413, f"{len(queries)} queries in one request; at most {self.config.max_batch} allowed, "
                                    "split the batch")
        too_long = [i for i, q in enumerate(queries) if len(q) > self.config.max_query_chars]
        if too_long:
            raise RequestError(413, f"query {too_long[0]} has {len(queries[too_long[0]])} characters; at most "
                                    f"{self.config.max_query_chars} allowed")
        topk = payload.get("topk")
        if topk is None:
            topk = self.config.default_topk
        if isinstance(topk, bool) or not isinstance(topk, int) or not 1 <= topk <= MAX_K:
            raise RequestError(422, f"'topk' must be an integer between 1 and {MAX_K}, got {topk!r}")
        return_scores = payload.get("return_scores", False)
        if not isinstance(return_scores, bool):
            raise RequestError(422, f"'return_scores' must be true or false, got {return_scores!r}")
        # blank queries get no documents instead of failing the whole batch (a training loop sends what it gets)
        live = [i for i, q in enumerate(queries) if q.strip()]
        hits: list[list[Hit]] = [[] for _ in queries]
        if live:
            for i, found in zip(live, self.retriever.batch_search([queries[i] for i in live], topk)):
                hits[i] = found
        if return_scores:
            result = [[{"document": document_json(h), "score": h.score} for h in hs] for hs in hits]
        else:
            result = [[document_json(h) for h in hs] for hs in hits]
        return {"result": result}

    # -- /access --------------------------------------------------------------------------------------------
    def access(self, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict) or set(payload) != {"urls"}:
            raise RequestError(422, 'the body must be a JSON object like {"urls": ["<url or passage id>", ...]}')
        urls = payload["urls"]
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise RequestError(422, "'urls' must be a list of strings")
        if len(urls) > self.config.max_urls:
            raise RequestError(413, f"{len(urls)} urls in one request; at most {self.config.max_urls} allowed")
        return {"result": [self.page(u) for u in urls]}

    def page(self, url: str) -> dict[str, Any] | None:
        """The page a url names: a passage id, or a Wikipedia-style url / title of the corpus; else ``None``."""
        if self.corpus is None or not url.strip():
            return None
        key = url.strip()
        if key in self.corpus:
            p = self.corpus[key]
            return {"url": url, "title": p.title, "contents": p.contents, "ids": [p.id]}
        positions = self._lookup_title(key)
        if not positions:
            return None
        passages = [self.corpus.passages[i] for i in positions]
        title = passages[0].title.strip('"')
        return {"url": url, "title": title, "contents": f'"{title}"\n' + "\n\n".join(p.text for p in passages),
                "ids": [p.id for p in passages]}

    def _lookup_title(self, url: str) -> list[int]:
        with self._titles_lock:
            if self._titles is None:
                titles: dict[str, list[int]] = {}
                for i, p in enumerate(self.corpus.passages):  # type: ignore[union-attr]
                    titles.setdefault(p.title.strip('"'), []).append(i)  # some corpus titles carry quotes
                lower: dict[str, list[int]] = {}
                for t, pos in titles.items():
                    lower.setdefault(t.lower(), []).extend(pos)
                self._titles, self._titles_lower = titles, lower
        path = urlparse(url).path if "://" in url else url
        if "index.php?title=" in url:
            path = url.split("index.php?title=", 1)[1]
        name = unquote(path.rsplit("/wiki/", 1)[-1] if "/wiki/" in path else path).replace("_", " ").strip().strip('"')
        return self._titles.get(name) or self._titles_lower.get(name.lower()) or []  # type: ignore[union-attr]

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "retriever": getattr(self.retriever, "name", type(self.retriever).__name__),
                "passages": len(self.corpus) if self.corpus is not None else None}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse one connection per thread
    # headers and body go out in two writes; with Nagle on, the client's delayed ACK adds ~40 ms to every answer
    disable_nagle_algorithm = True
    server: "RetrievalHTTPServer"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, close: bool = False) -> None:
        if close:
            self.close_connection = True
        self._send(status, {"detail": message})

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/") in ("/health", ""):
            self._send(200, self.server.service.health())
        else:
            self._error(404, f"no GET endpoint {self.path}; use POST /retrieve, POST /access or GET /health")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        routes = {"/retrieve": self.server.service.retrieve, "/access": self.server.service.access}
        route = routes.get(self.path.rstrip("/"))
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self._error(411, "send a Content-Length header with the JSON body", close=True)
            return
        try:
            length = int(length_header)
        except ValueError:
            self._error(400, f"bad Content-Length {length_header!r}", close=True)
            return
        limit = self.server.service.config.max_body_bytes
        if length > limit:
            self._error(413, f"request body of {length} bytes exceeds the limit of {limit} bytes", close=True)
            return
        body = self.rfile.read(length)
        if route is None:
            self._error(404, f"no endpoint {self.path}; use POST /retrieve or POST /access")
            return
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._error(422, f"the body is not valid JSON ({exc})")
            return
        try:
            self._send(200, route(payload))
        except RequestError as exc:
            self._error(exc.status, str(exc))
        except SteerEnvsError as exc:
            self._error(422, str(exc))
        except Exception as exc:  # a backend failure must not kill the server; the client retries on 5xx
            self._error(500, f"retrieval failed: {type(exc).__name__}: {exc}")


class RetrievalHTTPServer(ThreadingHTTPServer):
    """The HTTP server; ``url`` is its base address. Use :func:`start_server` to run it in a background thread."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, service: RetrievalService, host: str = "127.0.0.1", port: int = 8000, verbose: bool = False):
        self.service = service
        self.verbose = verbose
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}"


def build_server(
    retriever: Retriever, corpus: Corpus | None = None, config: ServerConfig | None = None, verbose: bool = False
) -> RetrievalHTTPServer:
    config = config or ServerConfig()
    try:
        return RetrievalHTTPServer(RetrievalService(retriever, corpus, config), config.host, config.port, verbose)
    except OSError as exc:
        raise SteerEnvsError(
            f"cannot listen on {config.host}:{config.port} ({exc.strerror or exc}); choose another --port "
            "(0 picks a free one) or stop the process using it"
        ) from None


def start_server(
    retriever: Retriever, corpus: Corpus | None = None, config: ServerConfig | None = None
) -> tuple[RetrievalHTTPServer, threading.Thread]:
    """Serve in a daemon thread (tests, notebooks). Stop with ``server.shutdown(); server.server_close()``."""
    server = build_server(retriever, corpus, config)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
                              name="steer-envs-retrieval-server")
    thread.start()
    return server, thread


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")

