"""The ``http:`` retriever: a real round trip through the server, and faults from real loopback servers
(timeouts, 500s, malformed JSON, refused requests, nothing listening) -> retried, then a clear error."""

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from steer_envs.data import load_corpus
from steer_envs.errors import SteerEnvsError
from steer_envs.retrieval import Retriever, make_retriever
from steer_envs.retrieval.http_client import HttpRetriever, RetrievalServiceError, parse_http_spec
from steer_envs.retrieval.server import ServerConfig, start_server
from tests.timing import wall_seconds_under


@pytest.fixture(scope="module")
def served(shared_data_dir):
    bm25 = make_retriever("bm25s", data_dir=shared_data_dir)
    srv, thread = start_server(bm25, load_corpus(data_dir=shared_data_dir), ServerConfig(port=0))
    yield bm25, srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def test_round_trip_equals_the_local_index(served):
    bm25, srv = served
    remote = make_retriever(f"http:{srv.url}", shared=False)
    assert isinstance(remote, Retriever)
    queries = ["who got the first nobel prize in physics", "danube delta", "zzqxjv qqqzzk"]
    for got, want in zip(remote.batch_search(queries, 4), bm25.batch_search(queries, 4)):
        assert [(h.id, h.title, h.text) for h in got] == [(h.id, h.title, h.text) for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want])
    assert remote.search("danube delta", 2)[0].id == bm25.search("danube delta", 2)[0].id


def test_bad_queries_fail_before_any_request(served):
    remote = make_retriever(f"http:{served[1].url}", shared=False)
    with pytest.raises(SteerEnvsError, match="empty"):
        remote.search("  ", 3)


class FaultyServer:
    """A loopback server misbehaving in one way; counts the requests it got."""

    def __init__(self, mode: str, delay: float = 0.0):
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests += 1
                if mode == "slow":
                    time.sleep(delay)
                if mode in ("truncated", "trickle"):
                    body = b'{"result": [[]]}' + b" " * 64
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body) + (100 if mode == "truncated" else 0)))
                    self.end_headers()
                    try:
                        if mode == "truncated":
                            self.wfile.write(body)
                            self.close_connection = True
                        for byte in body if mode == "trickle" else b"":
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(delay / 10)
                    except OSError:  # the client gave up and went away
                        pass
                    return
                body = {
                    "500": b'{"detail": "index exploded"}',
                    "malformed": b'{"result": [[{"document"',
                    "shape": b'{"result": []}',
                    "slow": b'{"result": [[]]}',
                    "422": b'{"detail": "topk must be small"}',
                }[mode]
                status = {"500": 500, "422": 422}.get(mode, 200)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:  # the client timed out and went away
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("500", "HTTP 500: index exploded"),
        ("malformed", "malformed JSON"),
        ("shape", "0 result lists for 1 queries"),
        ("slow", "timed out"),
        ("truncated", "IncompleteRead"),
        ("trickle", "still arriving at the deadline"),  # each byte within the socket timeout, the whole reply not
    ],
)
def test_faults_are_retried_then_reported_with_the_url(mode, expected):
    server = FaultyServer(mode, delay=0.6)
    try:
        retriever = make_retriever(f"http:{server.url}?timeout=0.2&retries=2&backoff=0.01", shared=False)
        with wall_seconds_under(20, typical_s=0.8), pytest.raises(RetrievalServiceError) as info:
            retriever.search("anything", 3)
        message = str(info.value)
        assert server.url in message and "after 3 attempt(s)" in message and expected in message
        assert server.requests == 3  # the first try and two retries
    finally:
        server.close()


def test_client_errors_are_not_retried():
    server = FaultyServer("422")
    try:
        retriever = make_retriever(f"http:{server.url}?retries=3&backoff=0.01", shared=False)
        with pytest.raises(RetrievalServiceError, match="refused the request \\(HTTP 422\\): topk must be small"):
            retriever.search("anything", 3)
        assert server.requests == 1
    finally:
        server.close()


def test_nothing_listening_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    retriever = make_retriever(f"http:127.0.0.1:{port}?timeout=0.5&retries=1&backoff=0.01", shared=False)
    with pytest.raises(
        RetrievalServiceError, match=f"127.0.0.1:{port}/retrieve did not answer after 2 attempt.*serve-retriever"
    ):
        retriever.search("anything", 3)


def test_backoff_grows_between_attempts():
    server = FaultyServer("500")
    try:
        retriever = HttpRetriever(parse_http_spec(f"{server.url}?retries=2&backoff=0.2"))
        start = time.perf_counter()
        with pytest.raises(RetrievalServiceError):
            retriever.search("anything", 3)
        assert time.perf_counter() - start >= 0.2 + 0.4 - 0.05  # 0.2 s, then 0.4 s
    finally:
        server.close()


@pytest.mark.parametrize(
    "spec,message",
    [
        ("http:", "needs a url"),
        ("http:ftp://host:1", "must look like http://HOST:PORT"),
        ("http:127.0.0.1:8000?tries=3", "unknown http retriever option 'tries'"),
        ("http:127.0.0.1:8000?timeout=fast", "not a number"),
        ("http:127.0.0.1:8000?timeout=0", "timeout must be > 0"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(SteerEnvsError, match=message):
        make_retriever(spec, shared=False)


def test_spec_forms_normalise_to_the_retrieve_endpoint():
    assert HttpRetriever(parse_http_spec("127.0.0.1:8000")).url == "http://127.0.0.1:8000/retrieve"
    assert (
        HttpRetriever(parse_http_spec("http://127.0.0.1:8000/retrieve?timeout=3")).url
        == "http://127.0.0.1:8000/retrieve"
    )
    assert parse_http_spec("127.0.0.1:8000?timeout=3&retries=0").retries == 0
