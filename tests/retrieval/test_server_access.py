"""The servers' access rules: an optional API key (401 without it), open health and docs, a loud warning
when asked to bind beyond loopback; and the OpenAPI page the FastAPI stack brings."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import requests

from steer_envs.llm import GenerationConfig
from steer_envs.llm.openai_client import OpenAIBackend, OpenAIBackendError, OpenAIOptions
from steer_envs.retrieval import make_retriever
from steer_envs.retrieval.server import ServerConfig, start_server
from steer_envs.serving import API_KEY_ENV, exposure_warning
from tests.servers.openai_server import OpenAICompatibleServer

KEY = "s3cret-key"


@pytest.fixture(scope="module")
def keyed_server(shared_data_dir):
    server, _ = start_server(make_retriever("bm25s", data_dir=shared_data_dir), None, ServerConfig(port=0, api_key=KEY))
    yield server
    server.shutdown()
    server.server_close()


def test_retrieval_server_refuses_requests_without_the_key(keyed_server):
    body = {"queries": ["danube delta"], "topk": 2}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}, {"Authorization": KEY}):
        response = requests.post(keyed_server.url + "/retrieve", json=body, headers=headers)
        assert response.status_code == 401 and "API key" in response.json()["detail"]
    assert requests.post(keyed_server.url + "/access", json={"urls": ["x"]}).status_code == 401
    for headers in ({"Authorization": f"Bearer {KEY}"}, {"X-API-Key": KEY}):
        response = requests.post(keyed_server.url + "/retrieve", json=body, headers=headers)
        assert response.status_code == 200 and len(response.json()["result"][0]) == 2
    assert requests.get(keyed_server.url + "/health").json()["status"] == "ok"  # health stays open


def test_the_http_retriever_sends_the_key_from_the_environment(keyed_server, monkeypatch):
    from steer_envs.errors import SteerEnvsError

    with pytest.raises(SteerEnvsError, match="401"):
        make_retriever(f"http:{keyed_server.url}", shared=False).search("danube delta", 2)
    monkeypatch.setenv(API_KEY_ENV, KEY)
    assert len(make_retriever(f"http:{keyed_server.url}", shared=False).search("danube delta", 2)) == 2


def test_openapi_page_documents_the_search_r1_request(keyed_server):
    assert requests.get(keyed_server.url + "/docs").status_code == 200
    schema = requests.get(keyed_server.url + "/openapi.json").json()
    body = schema["paths"]["/retrieve"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["properties"]) == {"queries", "topk", "return_scores"} and body["required"] == ["queries"]
    assert "/access" in schema["paths"] and "/health" in schema["paths"]


def test_openai_server_api_key(tiny_backend):  # noqa: F811 - fixture
    with OpenAICompatibleServer(tiny_backend, model_name="tiny", api_key=KEY) as server:
        denied = OpenAIBackend("tiny", server.base_url, OpenAIOptions(api_key="wrong", max_retries=0))
        with pytest.raises(OpenAIBackendError, match="401"):
            denied.generate(["hello"], GenerationConfig(max_new_tokens=2))
        allowed = OpenAIBackend("tiny", server.base_url, OpenAIOptions(api_key=KEY))
        assert allowed.generate(["hello"], GenerationConfig(max_new_tokens=2))[0].tokens == 2
        assert requests.get(server.base_url + "/models").status_code == 401
        assert requests.get(server.base_url.removesuffix("/v1") + "/docs").status_code == 200


def test_exposure_warning_names_the_address_and_the_missing_key():
    assert exposure_warning("127.0.0.1", None, "x") is None and exposure_warning("localhost", None, "x") is None
    loud = exposure_warning("0.0.0.0", None, "retrieval server")
    assert "WARNING" in loud and "0.0.0.0" in loud and "NO API key" in loud and API_KEY_ENV in loud
    assert "NO API key" not in exposure_warning("0.0.0.0", KEY, "retrieval server")


@pytest.mark.slow
def test_serve_retriever_beyond_loopback_warns_loudly(shared_data_dir):
    env = {**os.environ}
    env.pop(API_KEY_ENV, None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "steer_envs.cli.main",
            "serve-retriever",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--data-dir",
            str(shared_data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert re.search(r"at http://0\.0\.0\.0:\d+", line), line
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert "WARNING" in err and "0.0.0.0" in err and "NO API key" in err
