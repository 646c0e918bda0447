"""The OpenAI-compatible test server under hostile input: every bad request is a 4xx with a JSON error (OpenAI's
``{"error": {...}}``) before any generation runs, and web pages of other origins are refused. An echo backend
stands in for a model (these are properties of the HTTP layer)."""

from __future__ import annotations

import pytest
import requests

from steer_envs.llm.base import Generation
from tests.servers.openai_server import OpenAICompatibleServer


class EchoBackend:
    """Answers every prompt with ``"ok"``; counts the prompts it was asked to generate for."""

    def __init__(self) -> None:
        self.prompts = 0

    def generate(self, prompts, config):
        self.prompts += len(prompts)
        return [Generation(text="ok", tokens=1, finish_reason="stop") for _ in prompts]


@pytest.fixture(scope="module")
def served():
    backend = EchoBackend()
    with OpenAICompatibleServer(backend, model_name="echo", max_body_bytes=100_000) as server:
        yield server, backend


@pytest.mark.parametrize(
    "body,status,message",
    [
        (b'{"prompt": ' + b"[" * 5000 + b"]" * 5000 + b"}", 422, "nested too deeply"),
        (b'{"prompt": "x", "seed": ' + b"9" * 5000 + b"}", 422, "5000 digits"),
        (b'{"prompt": "\\ud800"}', 422, "lone UTF-16 surrogate"),
        (b'{"prompt": "x", "seed": true}', 400, "seed"),
        (b'{"prompt": "x", "n": 1000000000}', 400, "'n'"),
        (b'{"prompt": "' + b"x" * 200_000 + b'"}', 413, "exceeds the limit"),
    ],
    ids=["deep-array", "huge-int", "lone-surrogate", "seed-true", "huge-n", "oversized"],
)
def test_hostile_bodies_are_a_4xx_with_a_json_error_and_nothing_runs(served, body, status, message):
    server, backend = served
    before = backend.prompts
    for path in ("/completions", "/chat/completions"):
        reply = requests.post(server.base_url + path, data=body, headers={"Content-Type": "application/json"})
        assert reply.status_code == status and message in reply.json()["error"]["message"], (path, reply.text)
    assert backend.prompts == before


def test_a_chunked_body_is_bounded(served):
    server, _ = served

    def chunks():
        for _ in range(200):
            yield b"x" * 1024

    reply = requests.post(server.base_url + "/completions", data=chunks(), timeout=30)
    assert reply.status_code == 413 and "exceeds the limit" in reply.json()["error"]["message"]


def test_a_web_page_of_another_origin_is_refused(served):
    server, backend = served
    reply = requests.post(
        server.base_url + "/completions",
        data=b'{"prompt": "x"}',
        headers={"Origin": "http://evil.example", "Content-Type": "text/plain"},
    )
    assert reply.status_code == 403 and "--allow-origin" in reply.json()["error"]["message"]
    reply = requests.post(
        server.base_url + "/completions", json={"prompt": "x"}, headers={"Origin": "http://127.0.0.1:5000"}
    )
    assert reply.status_code == 200 and reply.json()["choices"][0]["text"] == "ok"
