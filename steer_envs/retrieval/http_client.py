"""``http:<url>``: a retriever that asks a Search-R1-compatible retrieval server (``POST /retrieve``).

Why: one index can serve many processes (vectorised env workers, an LLM executor on another machine), and
users can point the environments at the very server their agent was trained with (Search-R1's e5 / BM25 server,
ASearcher's, or ``steer-envs serve-retriever``). Servers fail in real life, so every request has a timeout and
is retried with exponential backoff on connection errors (refused, reset, a server that died mid-run), timeouts
(``timeout`` bounds the whole reply, so a trickling server cannot hold a run), truncated bodies, 5xx answers and
malformed JSON; a 4xx answer is the caller's mistake and is reported at once. After the last attempt the error
names the URL; an executor records it on the episode (``info["failure"]``) and the run goes on.

Spec: ``http:<base url>[?timeout=S&retries=N&backoff=S]``, e.g. ``http:http://127.0.0.1:8000`` or
``http:127.0.0.1:8000?timeout=5`` (``/retrieve`` is appended when missing).
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlparse

from ..data.records import Passage
from ..errors import ServiceError, SteerEnvsError
from ..httpio import read_body
from ..serving import API_KEY_ENV
from .base import Hit, check_query
from .registry import RetrieverContext


class RetrievalServiceError(ServiceError):
    """The retrieval server could not answer (after retries), or refused the request."""


@dataclass(frozen=True)
class HttpRetrieverConfig:
    url: str
    timeout: float = 10.0
    retries: int = 3
    backoff: float = 0.2


class _BadAnswer(Exception):
    """An answer worth retrying (5xx, malformed JSON, wrong shape)."""


class HttpRetriever:
    """:class:`Retriever` over HTTP. One keep-alive connection per thread (the class is thread-safe)."""

    name = "http"

    def __init__(self, config: HttpRetrieverConfig) -> None:
        parsed = urlparse(config.url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise SteerEnvsError(f"retrieval server url {config.url!r} must look like http://HOST:PORT[/retrieve]")
        if config.timeout <= 0 or config.retries < 0 or config.backoff < 0:
            raise SteerEnvsError("http retriever: timeout must be > 0, retries and backoff >= 0")
        self.config = config
        self._scheme = parsed.scheme
        self._netloc = parsed.netloc
        self._path = parsed.path.rstrip("/") or ""
        if not self._path.endswith("/retrieve"):
            self._path += "/retrieve"
        self.url = f"{parsed.scheme}://{parsed.netloc}{self._path}"
        self._local = threading.local()
        # a server started with --api-key wants it on every request (taken from the environment, never the spec,
        # so it does not end up in logs and setting cards)
        key = os.environ.get(API_KEY_ENV)
        self._headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}

    # -- transport ------------------------------------------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            conn = cls(self._netloc, timeout=self.config.timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _post_once(self, payload: dict[str, Any]) -> Any:
        body = json.dumps(payload).encode("utf-8")
        conn = self._connection()
        deadline = time.monotonic() + self.config.timeout
        try:
            conn.request("POST", self._path, body=body, headers=self._headers)
            response = conn.getresponse()
            data = read_body(response, deadline)
        except Exception:
            self._drop_connection()
            raise
        if response.getheader("Connection", "").lower() == "close":
            self._drop_connection()
        if 400 <= response.status < 500:
            detail = _detail(data)
            raise RetrievalServiceError(
                f"retrieval server {self.url} refused the request (HTTP {response.status}): {detail}"
            )
        if response.status >= 500:
            raise _BadAnswer(f"HTTP {response.status}: {_detail(data)}")
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _BadAnswer(f"malformed JSON in the answer ({exc})") from None

    def _post(self, payload: dict[str, Any]) -> Any:
        attempts = self.config.retries + 1
        last = ""
        for attempt in range(attempts):
            try:
                return self._check_shape(self._post_once(payload), len(payload["queries"]))
            except RetrievalServiceError:
                raise
            except (OSError, http.client.HTTPException, _BadAnswer) as exc:
                last = f"{type(exc).__name__}: {exc}" if not isinstance(exc, _BadAnswer) else str(exc)
                if attempt + 1 < attempts:
                    time.sleep(self.config.backoff * (2**attempt))
        raise RetrievalServiceError(
            f"retrieval server {self.url} did not answer after {attempts} attempt(s) (timeout "
            f"{self.config.timeout:g}s each); last error: {last}. Is it running? Start one with "
            "'steer-envs serve-retriever', or pass another url as http:<url>"
        )

    @staticmethod
    def _check_shape(answer: Any, n_queries: int) -> list[list[Any]]:
        if not isinstance(answer, dict) or not isinstance(answer.get("result"), list):
            raise _BadAnswer('the answer is not of the form {"result": [...]}')
        result = answer["result"]
        if len(result) != n_queries or not all(isinstance(r, list) for r in result):
            raise _BadAnswer(f"the answer has {len(result)} result lists for {n_queries} queries")
        return result

    # -- Retriever protocol -----------------------------------------------------------------------------------
    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        for q in queries:
            check_query(q, k)
        if not queries:
            return []
        result = self._post({"queries": list(queries), "topk": k, "return_scores": True})
        try:
            return [[_hit(item) for item in items] for items in result]
        except (KeyError, TypeError, ValueError) as exc:
            raise RetrievalServiceError(
                f"retrieval server {self.url} answered documents without 'id'/'contents' ({exc!r}); it does not "
                "speak the Search-R1 /retrieve format"
            ) from None

    def close(self) -> None:
        self._drop_connection()


def _detail(data: bytes) -> str:
    try:
        obj = json.loads(data)
        if isinstance(obj, dict) and "detail" in obj:
            return str(obj["detail"])
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    return data[:300].decode("utf-8", "replace")


def _hit(item: dict[str, Any]) -> Hit:
    """One result item, with scores (``{"document": {...}, "score": s}``) or without (the document itself)."""
    doc, score = (item["document"], float(item.get("score", 0.0))) if "document" in item else (item, 0.0)
    pid = str(doc["id"]) if "id" in doc else str(doc.get("docid", ""))
    if "title" in doc and "text" in doc:
        return Hit(pid, str(doc["title"]), str(doc["text"]), score)
    passage = Passage.from_contents(pid, str(doc["contents"]))
    return Hit(pid, passage.title, passage.text, score)


def parse_http_spec(arg: str) -> HttpRetrieverConfig:
    """``<url>[?timeout=S&retries=N&backoff=S]`` -> config (a bare ``host:port`` gets ``http://``)."""
    if not arg:
        raise SteerEnvsError(
            "the http retriever needs a url: http:http://127.0.0.1:8000 (see steer-envs serve-retriever)"
        )
    url = arg if "://" in arg else f"http://{arg}"
    parsed = urlparse(url)
    options: dict[str, Any] = {}
    for key, value in parse_qsl(parsed.query):
        if key not in ("timeout", "retries", "backoff"):
            raise SteerEnvsError(f"unknown http retriever option {key!r}; options: timeout, retries, backoff")
        try:
            options[key] = int(value) if key == "retries" else float(value)
        except ValueError:
            raise SteerEnvsError(f"http retriever option {key}={value!r} is not a number") from None
    return HttpRetrieverConfig(url=parsed._replace(query="").geturl(), **options)


def make_http_retriever(arg: str, ctx: RetrieverContext) -> HttpRetriever:
    """Factory of the ``http`` retriever kind (registered in :mod:`steer_envs.retrieval.registry`)."""
    return HttpRetriever(parse_http_spec(arg))
