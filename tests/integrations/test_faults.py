"""A server dying in the middle of a run: the model server behind an ``openai:`` executor, and the retrieval
server behind the ``http:`` retriever. Every request is retried with backoff, then the episode ends with the
reason in ``info["failure"]`` (and in the harness's episode record), and the run goes on to the next episode."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym

import steer_envs  # noqa: F401
from baselines.simple import NoSupervision
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate, run_episode
from steer_envs.episodes import EpisodeLog, episode_seed
from steer_envs.retrieval import make_retriever
from tests.llm.support import FaultServer

SEARCH_REPLY = "<think> I need to look this up. </think>\n<search> who wrote the novel"
RETRIES = "timeout=2&max_retries=2&backoff=0.01&max_backoff=0.02"


def test_model_server_dying_mid_run_ends_episodes_with_the_reason_and_the_run_goes_on(tmp_path, shared_data_dir):
    with FaultServer("script", script=[SEARCH_REPLY], die_after=4) as server:
        executor = f"openai:m@{server.base_url}?{RETRIES}"
        folder = RunFolder(
            tmp_path / "run",
            EvalConfig(executor=executor, benchmarks=("nq",), split="dev", limit=4, seeds=1, max_turns=3),
        )
        outcome = evaluate(folder, "no_supervision", progress=False, log=lambda _: None)
    assert outcome.ran == 4  # every episode of the run was played and recorded
    records = EpisodeLog(folder.episodes_path("no_supervision")).records
    assert len(records) == 4
    first, *rest = records
    assert first.failure is None and first.executor_turns == 3  # 3 healthy turns, then the budget ran out
    for record in rest:
        assert record.failure is not None and server.base_url in record.failure
        assert "after 3 attempt(s)" in record.failure and "connection failed" in record.failure
        assert record.f1 == 0.0
    assert server.posts >= 4 + 1  # the request that met the dying server, and nothing was answered after it
    assert records[1].executor_turns == 2  # one healthy turn of episode 2, then the failed one


class _RetrievalServer:
    """A Search-R1 ``/retrieve`` server in a thread, backed by the real BM25 index, that dies after N requests."""

    def __init__(self, die_after: int):
        self.requests = 0
        bm25 = make_retriever("bm25s")
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests += 1
                if outer.requests > die_after:
                    self.close_connection = True
                    threading.Thread(target=outer.close, daemon=True).start()
                    return  # no reply: the connection drops and nothing listens any more
                hits = bm25.batch_search(payload["queries"], payload["topk"])
                body = json.dumps(
                    {
                        "result": [
                            [
                                {"document": {"id": h.id, "contents": f'"{h.title}"\n{h.text}'}, "score": h.score}
                                for h in row
                            ]
                            for row in hits
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._closed = threading.Event()
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        if not self._closed.is_set():
            self._closed.set()
            self.httpd.shutdown()
            self.httpd.server_close()


def test_retrieval_server_dying_mid_run_ends_episodes_with_the_reason_and_the_run_goes_on(shared_data_dir):
    # one search per healthy episode here (the kept-alive connection wastes no request): 2 answered, then it dies
    server = _RetrievalServer(die_after=2)
    try:
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            split="dev",
            benchmarks=["hotpotqa"],
            max_turns=4,
            retriever=f"http:{server.url}?timeout=2&retries=2&backoff=0.01",
        )
        task_ids = [t.id for t in env.unwrapped.tasks[:5]]
        records = [run_episode(env, NoSupervision(), episode_seed(t, 0), t, "none", 0) for t in task_ids]
    finally:
        server.close()
    assert len(records) == 5
    failed = [r for r in records if r.failure]
    assert records[0].failure is None and len(failed) >= 3
    for r in failed:
        assert r.failed  # a failure, not an outcome: the harness leaves it out of its means
        assert f"{server.url}/retrieve did not answer after 3 attempt(s)" in r.failure
        assert "retrieval failed" in r.failure or "did not answer" in r.failure
