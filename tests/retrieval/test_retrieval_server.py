"""The retrieval server on loopback with the real bm25s index: Search-R1's and ASearcher's requests, limits,
errors, and a real (small) concurrent load."""

import http.client
import json

import pytest
import requests

from perf.retrieval_load import run_load
from steer_envs.data import load_corpus, load_tasks
from steer_envs.retrieval.base import Hit
from steer_envs.retrieval.server import ServerConfig, start_server


@pytest.fixture(scope="module")
def server(bm25, shared_data_dir):
    srv, thread = start_server(
        bm25,
        load_corpus(data_dir=shared_data_dir),
        ServerConfig(port=0, max_batch=16, max_query_chars=300, max_body_bytes=64_000),
    )
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def search_r1_passages2string(retrieval_result):
    """What Search-R1's generation loop does with each result list (its ``_passages2string``)."""
    out = ""
    for idx, doc_item in enumerate(retrieval_result):
        content = doc_item["document"]["contents"]
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        out += f"Doc {idx + 1}(Title: {title}) {text}\n"
    return out


def test_search_r1_exact_client_request(server, bm25):
    queries = ["who got the first nobel prize in physics", "capital of romania"]
    payload = {"queries": queries, "topk": 3, "return_scores": True}  # Search-R1's _batch_search body
    answer = requests.post(server.url + "/retrieve", json=payload).json()
    assert set(answer) == {"result"} and len(answer["result"]) == 2
    for query, items in zip(queries, answer["result"]):
        assert len(items) == 3
        for item in items:
            assert set(item) == {"document", "score"}
            assert {"id", "contents"} <= set(item["document"])
            assert isinstance(item["score"], float)
        assert [i["document"]["id"] for i in items] == [h.id for h in bm25.search(query, 3)]
        assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)
    text = search_r1_passages2string(answer["result"][0])
    assert text.startswith("Doc 1(Title: ") and "Röntgen" in text


def test_without_scores_documents_come_alone_with_asearcher_fields(server):
    answer = requests.post(server.url + "/retrieve", json={"queries": ["danube delta"], "topk": 2}).json()
    docs = answer["result"][0]
    assert len(docs) == 2 and all("document" not in d and {"contents", "url", "id"} <= set(d) for d in docs)


def test_default_topk_and_blank_query(server):
    answer = requests.post(server.url + "/retrieve", json={"queries": ["danube delta", "   "]}).json()
    assert len(answer["result"][0]) == 3  # the server's default topk
    assert answer["result"][1] == []


def test_access_resolves_ids_and_titles_else_null(server, shared_data_dir):
    corpus = load_corpus(data_dir=shared_data_dir)
    passage = corpus.passages[10]
    hit = requests.post(server.url + "/retrieve", json={"queries": ["first nobel prize physics"], "topk": 1}).json()
    url = hit["result"][0][0]["url"]
    answer = requests.post(server.url + "/access", json={"urls": [passage.id, url, "https://example.org/none"]}).json()
    by_id, by_url, missing = answer["result"]
    assert by_id["ids"] == [passage.id] and passage.text in by_id["contents"]
    assert hit["result"][0][0]["id"] in by_url["ids"] and by_url["contents"]
    assert missing is None


@pytest.mark.parametrize(
    "body,status,message",
    [
        (b'{"queries": ["x"', 422, "not valid JSON"),
        (b'["x"]', 422, "JSON object"),
        (b'{"queries": "x"}', 422, "list of strings"),
        (b'{"queries": ["x"], "topk": 0}', 422, "topk"),
        (b'{"queries": ["x"], "return_scores": "yes"}', 422, "return_scores"),
        (b'{"query": ["x"]}', 422, "unknown field"),
        (json.dumps({"queries": ["q"] * 17}).encode(), 413, "at most 16"),
        (json.dumps({"queries": ["word " * 100]}).encode(), 413, "characters"),
        (json.dumps({"queries": ["q" * 200] * 400}).encode(), 413, "exceeds the limit"),
    ],
)
def test_malformed_and_oversized_requests(server, body, status, message):
    response = requests.post(server.url + "/retrieve", data=body, headers={"Content-Type": "application/json"})
    assert response.status_code == status
    assert message in response.json()["detail"]


def test_unknown_endpoint_is_404_and_health_is_ok(server):
    assert requests.post(server.url + "/search", json={"queries": ["x"]}).status_code == 404
    health = requests.get(server.url + "/health").json()
    assert health == {"status": "ok", "retriever": "bm25s", "passages": 48907}


def test_keep_alive_connection_serves_many_requests(server):
    conn = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
    for q in ["nobel prize", "romania", "danube"]:
        conn.request("POST", "/retrieve", body=json.dumps({"queries": [q], "topk": 1}))
        response = conn.getresponse()
        assert response.status == 200
        assert len(json.loads(response.read())["result"][0]) == 1
    conn.close()


@pytest.mark.slow
def test_concurrent_load_has_no_errors(server, shared_data_dir):
    queries = [t.question for t in load_tasks("hotpotqa", split="test", data_dir=shared_data_dir)]
    report = run_load(server.url, queries, clients=4, requests_per_client=50, topk=3, deadline_s=120)
    assert report.requests == 200
    assert report.errors == 0, report.error_samples
    assert 0 < report.p50_ms <= report.p99_ms


def test_a_stopped_server_releases_its_retriever_and_corpus():
    """Routes reach the service through the app's state: FastAPI's module-level caches of endpoint functions would
    otherwise keep a stopped server's retriever and corpus alive for the rest of the process."""
    import gc
    import weakref

    class OneHitRetriever:
        def batch_search(self, queries, k):
            return [[Hit(id="0", title="Title", text="text", score=1.0)] for _ in queries]

    retriever = OneHitRetriever()
    srv, thread = start_server(retriever, None, ServerConfig(port=0, batching=False))
    try:
        reply = requests.post(f"{srv.url}/retrieve", json={"queries": ["q"], "topk": 1}, timeout=10)
        assert reply.status_code == 200 and "Title" in json.dumps(reply.json()["result"])
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
    released = weakref.ref(retriever)
    del retriever, srv, thread
    gc.collect()
    assert released() is None
