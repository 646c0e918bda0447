"""A retrieval server speaking the Search-R1 / ASearcher HTTP API, over any :class:`Retriever`, on FastAPI + uvicorn.

Why: search agents trained with Search-R1 or ASearcher talk to a retrieval *server*; serving our corpus with
the same API lets those agents (and our ``http:`` backend, and vectorised env workers in other processes) share
one index. FastAPI + uvicorn is the stack those projects' own servers run. Endpoints, as in Search-R1's
``retrieval_server.py`` and ASearcher's ``local_retrieval_server.py``:

* ``POST /retrieve`` ``{"queries": [...], "topk": k, "return_scores": bool}`` ->
  ``{"result": [[{"document": {"id", "title", "text", "contents", "url"}, "score": s}, ...], ...]}``;
  without ``return_scores`` each list holds the documents alone (ASearcher reads ``contents`` and ``url``).
* ``POST /access`` ``{"urls": [...]}`` -> ``{"result": [page or null, ...]}`` (ASearcher's page access): a url
  resolves when it is a passage id or names a Wikipedia title of the corpus (``.../wiki/Title``); the page is
  ``{"url", "title", "contents", "ids"}`` with all of that title's passages; anything else gives ``null``.
* ``GET /health`` -> ``{"status": "ok", "retriever", "passages"}``; ``GET /docs``: the OpenAPI page.

Requests are validated by pydantic models (:class:`RetrieveRequest`, :class:`AccessRequest`) and bounded (body
size, batch size, query length, the hits one request asks for): 413 when too large, 422 with a
``{"detail": message}`` body for malformed JSON or wrong fields (:mod:`steer_envs.validation`: nesting depth, integer
size, lone surrogates), 403 for a web page of another origin (:func:`steer_envs.serving.origin_allowed`).
Concurrent requests are batched dynamically (:mod:`.batching`): the requests that arrive while a search runs (or
within ``batch_window_ms``) go to the retriever as one ``batch_search``. Binds to loopback unless told otherwise;
an optional API key (:mod:`steer_envs.serving`) guards the data endpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from fastapi import FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ..data.corpus import Corpus
from ..errors import SteerEnvsError
from ..serving import (
    BODY_TIMEOUT_S,
    HEADER_TIMEOUT_S,
    UvicornServer,
    authorized,
    origin_allowed,
    origin_refusal,
)
from ..validation import RequestError, parse_json_async, read_body
from .base import MAX_K, Hit, Retriever
from .batching import DynamicBatcher

PAGE_URL_PREFIX = "https://en.wikipedia.org/wiki/"


@dataclass(frozen=True)
class ServerConfig:
    """Limits and defaults. ``default_topk`` answers requests that omit ``topk`` (Search-R1's ``--topk``)."""

    host: str = "127.0.0.1"
    port: int = 8000
    default_topk: int = 3
    max_batch: int = 512
    max_query_chars: int = 4096
    #: the largest request body: what ``max_total_query_chars`` of queries can take, escaped (``\\uXXXX`` is 6 bytes
    #: a character), with room to spare; a larger body is refused on its announced length, before it is read
    max_body_bytes: int = 2 * 1024 * 1024
    max_urls: int = 256
    #: per-request work: queries x topk (the hits searched for and written back) and the query characters in all;
    #: one maximal request (512 long queries, topk 100: an 86 MB answer) would hold the server for seconds
    max_hits: int = 4096
    max_total_query_chars: int = 256 * 1024
    #: the largest answer written back (bytes; /access pages included): past it 413, and the client asks for less
    max_answer_bytes: int = 32 * 1024 * 1024
    #: dynamic batching: how long to collect concurrent requests before one retriever call. 0 (the default) waits
    #: for nothing, and what arrives while a search runs is batched: with bm25s that measured best (BENCHMARKS.md);
    #: a few ms pays off for backends whose batch calls are cheaper per query (Lucene's threads, a dense encoder).
    #: ``batching=False`` answers each request with its own call
    batch_window_ms: float = 0.0
    batching: bool = True
    #: requests to /retrieve and /access must carry this key (None: no key, for loopback use)
    api_key: str | None = None
    #: browser origins allowed besides this machine's pages ("*": any); see :func:`steer_envs.serving.origin_allowed`
    allowed_origins: tuple[str, ...] = ()
    header_timeout_s: float = HEADER_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S


class RetrieveRequest(BaseModel):
    """Search-R1's ``/retrieve`` body (ASearcher sends the same)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"queries": ["who wrote hamlet"], "topk": 3, "return_scores": True}]},
    )
    queries: list[str] = Field(description="the queries; a blank query gets no documents")
    topk: int | None = Field(None, ge=1, le=MAX_K, description="passages per query (default: the server's --topk)")
    return_scores: bool = Field(False, description="wrap each document as {document, score}")


class AccessRequest(BaseModel):
    """ASearcher's ``/access`` body."""

    model_config = ConfigDict(extra="forbid", strict=True)
    urls: list[str] = Field(description="passage ids or Wikipedia urls / titles of the corpus")


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
    def parse_retrieve(self, payload: Any) -> RetrieveRequest:
        """Validate a ``/retrieve`` body (the model) and its limits, with one message per mistake."""
        if not isinstance(payload, dict):
            raise RequestError(422, 'the body must be a JSON object like {"queries": ["..."], "topk": 3}')
        request: RetrieveRequest | None = None
        bad: set[str] = set()  # the fields the model refused ("extra": unknown fields)
        try:
            request = RetrieveRequest.model_validate(payload)
        except ValidationError as exc:
            for error in exc.errors():
                bad.add("extra" if error["type"] == "extra_forbidden" else str(error["loc"][0]) if error["loc"] else "")
        if "extra" in bad:
            unknown = sorted(set(payload) - set(RetrieveRequest.model_fields))
            raise RequestError(422, f"unknown field(s) {unknown}; allowed: queries, topk, return_scores")
        if "queries" in bad:
            raise RequestError(422, "'queries' must be a list of strings")
        queries = payload["queries"]
        if len(queries) > self.config.max_batch:
            raise RequestError(
                413, f"{len(queries)} queries in one request; at most {self.config.max_batch} allowed, split the batch"
            )
        too_long = [i for i, q in enumerate(queries) if len(q) > self.config.max_query_chars]
        if too_long:
            raise RequestError(
                413,
                f"query {too_long[0]} has {len(queries[too_long[0]])} characters; at most "
                f"{self.config.max_query_chars} allowed",
            )
        if "topk" in bad:
            raise RequestError(422, f"'topk' must be an integer between 1 and {MAX_K}, got {payload.get('topk')!r}")
        if "return_scores" in bad:
            raise RequestError(422, f"'return_scores' must be true or false, got {payload.get('return_scores')!r}")
        assert request is not None
        self._check_work(request)
        return request

    def _check_work(self, request: RetrieveRequest) -> None:
        """413 for a request that asks more than one request may: it would hold the server (and every small request
        queued behind it) for seconds."""
        total = sum(len(q) for q in request.queries)
        if total > self.config.max_total_query_chars:
            raise RequestError(
                413,
                f"the queries hold {total} characters in all; at most "
                f"{self.config.max_total_query_chars} per request, split the batch",
            )
        hits = len(request.queries) * self.topk(request)
        if hits > self.config.max_hits:
            raise RequestError(
                413,
                f"{len(request.queries)} queries x topk {self.topk(request)} = {hits} hits; at "
                f"most {self.config.max_hits} per request, split the batch or lower topk",
            )

    def live_queries(self, request: RetrieveRequest) -> list[int]:
        """Positions of the non-blank queries: blank ones get no documents instead of failing the whole batch (a
        training loop sends what it gets)."""
        return [i for i, q in enumerate(request.queries) if q.strip()]

    def answer(self, request: RetrieveRequest, live: list[int], found: list[list[Hit]]) -> dict[str, Any]:
        hits: list[list[Hit]] = [[] for _ in request.queries]
        for i, h in zip(live, found):
            hits[i] = h
        if request.return_scores:
            result = [[{"document": document_json(h), "score": h.score} for h in hs] for hs in hits]
        else:
            result = [[document_json(h) for h in hs] for hs in hits]
        return {"result": result}

    def topk(self, request: RetrieveRequest) -> int:
        return self.config.default_topk if request.topk is None else request.topk

    def retrieve(self, payload: Any) -> dict[str, Any]:
        """The whole ``/retrieve`` answer without HTTP (one retriever call)."""
        request = self.parse_retrieve(payload)
        live = self.live_queries(request)
        found = self.retriever.batch_search([request.queries[i] for i in live], self.topk(request)) if live else []
        return self.answer(request, live, found)

    # -- /access --------------------------------------------------------------------------------------------
    def access(self, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict) or set(payload) != {"urls"}:
            raise RequestError(422, 'the body must be a JSON object like {"urls": ["<url or passage id>", ...]}')
        try:
            urls = AccessRequest.model_validate(payload).urls
        except ValidationError:
            raise RequestError(422, "'urls' must be a list of strings") from None
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
        return {
            "url": url,
            "title": title,
            "contents": f'"{title}"\n' + "\n\n".join(p.text for p in passages),
            "ids": [p.id for p in passages],
        }

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
        return {
            "status": "ok",
            "retriever": getattr(self.retriever, "name", type(self.retriever).__name__),
            "passages": len(self.corpus) if self.corpus is not None else None,
        }


def _json_response(status: int, body: dict[str, Any], close: bool = False) -> Response:
    headers = {"Connection": "close"} if close else None
    return Response(
        json.dumps(body, ensure_ascii=False).encode("utf-8"),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def error_response(status: int, message: str, close: bool | None = None):
    """A ``{"detail": message}`` answer; ``close`` (default: 400, 411, 413) ends the connection after it."""
    return _json_response(status, {"detail": message}, close=status in (400, 411, 413) if close is None else close)


def create_app(service: RetrievalService):
    """The FastAPI app over ``service`` (its config holds the limits, the batching window and the API key).

    The routes reach the service through ``request.app.state``, never through a closure: FastAPI keeps endpoint
    functions in module-level caches, and a closure would keep the service (its retriever and corpus) alive for the
    life of the process after the server stopped."""
    batcher = (
        DynamicBatcher(service.retriever, window_s=service.config.batch_window_ms / 1000)
        if service.config.batching
        else None
    )

    @contextlib.asynccontextmanager
    async def lifespan(running_app):
        yield
        if running_app.state.batcher is not None:
            running_app.state.batcher.close()

    app = FastAPI(
        title="steer-envs retrieval server",
        version="1",
        lifespan=lifespan,
        description="The Search-R1 / ASearcher retrieval API over the steer-envs corpus.",
    )
    app.state.service = service
    app.state.batcher = batcher

    def service_checked(request: Request) -> RetrievalService:
        """The app's service, once the request carries the API key it asks for and comes from an allowed origin
        (checked in the handlers rather than a middleware: Starlette's HTTP middleware costs more than the search
        itself)."""
        served: RetrievalService = request.app.state.service
        if not origin_allowed(request.headers, served.config.allowed_origins):
            raise RequestError(403, origin_refusal(request.headers))
        key = served.config.api_key
        if key is not None and not authorized(request.headers, request.url.path, key):
            raise RequestError(401, "missing or wrong API key; send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'")
        return served

    async def search(request: Request, queries: list[str], k: int) -> list[list[Hit]]:
        pending = request.app.state.batcher
        if pending is not None:
            return await pending.search(queries, k)
        return await asyncio.to_thread(request.app.state.service.retriever.batch_search, queries, k)

    async def payload_of(request: Request) -> Any:
        return await parse_json_async(await read_body(request, request.app.state.service.config.max_body_bytes))

    async def answered(request: Request, payload: dict[str, Any]) -> Response:
        """A large answer is encoded off the event loop (megabytes of JSON would stall every other request), and
        one past ``max_answer_bytes`` is refused rather than sent."""
        if sum(len(r) if isinstance(r, list) else 1 for r in payload["result"]) <= 64:
            response = _json_response(200, payload)
        else:
            response = await asyncio.to_thread(_json_response, 200, payload)
        limit = request.app.state.service.config.max_answer_bytes
        if len(response.body) > limit:
            raise RequestError(
                413,
                f"the answer would be {len(response.body)} bytes; at most {limit} per request, "
                "ask for fewer queries, urls or a lower topk",
            )
        return response

    def schema_of(model: type[BaseModel]) -> dict[str, Any]:
        body = {"application/json": {"schema": model.model_json_schema()}}
        return {"requestBody": {"required": True, "content": body}}

    @app.post("/retrieve", openapi_extra=schema_of(RetrieveRequest), summary="Search-R1 / ASearcher search")
    async def retrieve(request: Request):
        try:
            served = service_checked(request)
            parsed = served.parse_retrieve(await payload_of(request))
            live = served.live_queries(parsed)
            found = await search(request, [parsed.queries[i] for i in live], served.topk(parsed)) if live else []
            return await answered(request, served.answer(parsed, live, found))
        except RequestError as exc:
            return error_response(exc.status, str(exc), exc.close)
        except SteerEnvsError as exc:
            return error_response(422, str(exc))
        except Exception as exc:  # noqa: BLE001 - a backend failure must not kill the server; clients retry 5xx
            return error_response(500, f"retrieval failed: {type(exc).__name__}: {exc}")

    @app.post("/access", openapi_extra=schema_of(AccessRequest), summary="ASearcher page access")
    async def access(request: Request):
        try:
            served = service_checked(request)
            payload = await payload_of(request)
            return await answered(request, await asyncio.to_thread(served.access, payload))
        except RequestError as exc:
            return error_response(exc.status, str(exc), exc.close)
        except Exception as exc:  # noqa: BLE001
            return error_response(500, f"page access failed: {type(exc).__name__}: {exc}")

    @app.get("/health")
    async def health(request: Request):
        return request.app.state.service.health()

    @app.get("/", include_in_schema=False)
    async def root(request: Request):
        return request.app.state.service.health()

    for path, handler in (("/retrieve/", retrieve), ("/access/", access)):
        app.add_api_route(path, handler, methods=["POST"], include_in_schema=False)

    @app.exception_handler(StarletteHTTPException)
    async def not_found(request: Request, exc: StarletteHTTPException):
        if exc.status_code in (404, 405):
            return error_response(
                404, f"no {request.method} endpoint {request.url.path}; use POST /retrieve, POST /access or GET /health"
            )
        return error_response(exc.status_code, str(exc.detail))

    return app


class RetrievalHTTPServer(UvicornServer):
    """The retrieval server; ``url`` is its base address. Use :func:`start_server` to run it in a background thread
    (stop with ``shutdown()`` then ``server_close()``), or ``serve_forever()`` to block (the CLI)."""

    def __init__(self, service: RetrievalService, host: str = "127.0.0.1", port: int = 8000, verbose: bool = False):
        self.service = service
        self.app = create_app(service)
        super().__init__(
            self.app,
            host,
            port,
            verbose,
            header_timeout_s=service.config.header_timeout_s,
            body_timeout_s=service.config.body_timeout_s,
        )

    @property
    def batch_stats(self):
        batcher = self.app.state.batcher
        return None if batcher is None else batcher.stats


def build_server(
    retriever: Retriever, corpus: Corpus | None = None, config: ServerConfig | None = None, verbose: bool = False
) -> RetrievalHTTPServer:
    config = config or ServerConfig()
    return RetrievalHTTPServer(RetrievalService(retriever, corpus, config), config.host, config.port, verbose)


def start_server(
    retriever: Retriever, corpus: Corpus | None = None, config: ServerConfig | None = None
) -> tuple[RetrievalHTTPServer, threading.Thread]:
    """Serve in a daemon thread (tests, notebooks). Stop with ``server.shutdown(); server.server_close()``."""
    server = build_server(retriever, corpus, config)
    server.start()
    return server, server._thread  # type: ignore[return-value]
