"""The openai: backend over real HTTP on loopback: against the project's own server wrapping the tiny model,
and against servers that time out, fail with HTTP 500 or 404, or reply with malformed JSON."""

import json
import math
import urllib.error
import urllib.request

import pytest

from steer_envs.errors import SteerEnvsError
from steer_envs.llm import GenerationConfig, LLMBackendError, make_backend
from steer_envs.llm.openai_client import OpenAIBackend, OpenAIBackendError, OpenAIOptions, parse_openai_arg
from tests.llm.support import FaultServer
from tests.servers.openai_server import OpenAICompatibleServer
from tests.timing import wall_seconds_under

PROMPTS = ["Question: who wrote the novel?\n", "<think> I need to search. </think> <search>", "The river"]
FAST_RETRY = dict(timeout=0.3, max_retries=2, backoff=0.01, max_backoff=0.02)


@pytest.fixture(scope="module")
def tiny_server(tiny_backend):
    with OpenAICompatibleServer(tiny_backend, model_name="tiny") as server:
        yield server


def test_spec_parsing_normalises_the_url():
    assert parse_openai_arg("qwen@http://127.0.0.1:8000") == ("qwen", "http://127.0.0.1:8000/v1")
    assert parse_openai_arg("qwen@http://127.0.0.1:8000/v1/") == ("qwen", "http://127.0.0.1:8000/v1")
    with pytest.raises(SteerEnvsError, match="max_retries"):
        OpenAIOptions(max_retries=-1)


def test_completions_over_http_match_the_local_backend(tiny_server, tiny_backend):
    remote = make_backend(tiny_server.spec, shared=False)
    assert remote.models() == ["tiny"]
    config = GenerationConfig(max_new_tokens=10)
    assert [g.text for g in remote.generate(PROMPTS, config)] == [
        g.text for g in tiny_backend.generate(PROMPTS, config)
    ]
    assert all(g.tokens == 10 and g.finish_reason == "length" for g in remote.generate(PROMPTS[:1], config))


def test_stop_sequences_travel_over_http(tiny_server, tiny_backend):
    sample = dict(temperature=1.0, seed=3, max_new_tokens=24)
    free = tiny_backend.generate([PROMPTS[2]], GenerationConfig(**sample))[0].text
    stop = [w for w in free.split() if len(w) >= 2][1]
    remote = make_backend(tiny_server.spec, shared=False)
    got = remote.generate([PROMPTS[2]], GenerationConfig(stop=(stop,), **sample))[0]
    assert got.text == free[: free.index(stop)] and got.finish_reason == "stop" and got.stop_sequence == stop


def test_logprobs_over_http_match_the_local_backend(tiny_server, tiny_backend):
    remote = OpenAIBackend("tiny", tiny_server.base_url, OpenAIOptions(logprobs_k=len(tiny_backend.tokenizer)))
    local = tiny_backend.next_token_logprobs(PROMPTS, ["yes", "no"])
    over_http = remote.next_token_logprobs(PROMPTS, ["yes", "no"])
    for a, b in zip(local, over_http):
        assert b["yes"] == pytest.approx(a["yes"], abs=1e-4) and b["no"] == pytest.approx(a["no"], abs=1e-4)
    top = remote.top_logprobs(PROMPTS[:1], 5)[0]
    assert len(top) <= 5 and all(v <= 0 for v in top.values())
    assert sum(math.exp(v) for v in top.values()) <= 1 + 1e-6


def test_chat_endpoint_and_chat_logprobs(tiny_server, tiny_backend):
    chat = OpenAIBackend("tiny", tiny_server.base_url, OpenAIOptions(api="chat"))
    config = GenerationConfig(max_new_tokens=8)
    # the tiny tokenizer has no chat template, so one user message is the prompt itself
    assert chat.generate(PROMPTS[:2], config)[0].text == tiny_backend.generate(PROMPTS[:1], config)[0].text
    lp = chat.next_token_logprobs(PROMPTS[:1], ["yes", "no"])[0]
    assert set(lp) == {"yes", "no"} and all(v <= 0 for v in lp.values())


def test_batches_are_sent_concurrently(tiny_server):
    before = tiny_server.requests_served
    remote = OpenAIBackend("tiny", tiny_server.base_url, OpenAIOptions(concurrency=4))
    gens = remote.generate(PROMPTS * 3, GenerationConfig(max_new_tokens=4))
    assert len(gens) == 9 and tiny_server.requests_served - before == 9
    assert [g.text for g in gens[:3]] == [g.text for g in gens[3:6]]


def _post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_server_answers_bad_requests_with_openai_style_errors(tiny_server):
    url = tiny_server.base_url
    status, body = _post(f"{url}/completions", {"model": "tiny"})
    assert status == 400 and "prompt" in body["error"]["message"]
    status, body = _post(f"{url}/completions", {"model": "gpt-9", "prompt": "x"})
    assert status == 404 and "tiny" in body["error"]["message"]
    status, body = _post(f"{url}/completions", {"prompt": "x", "max_tokens": -3})
    assert status == 400 and "max_new_tokens" in body["error"]["message"]
    status, body = _post(f"{url}/embeddings", {"input": "x"})
    assert status == 404
    status, body = _post(f"{url}/chat/completions", {"messages": [{"role": "user"}]})
    assert status == 400 and "messages" in body["error"]["message"]
    status, body = _post(f"{url}/completions", {"prompt": ["a", "b"], "max_tokens": 2, "n": 2, "logprobs": 3})
    assert (
        status == 200 and len(body["choices"]) == 4 and 1 <= len(body["choices"][0]["logprobs"]["top_logprobs"][0]) <= 3
    )


@pytest.mark.parametrize(
    "mode, reason, delay",
    [
        ("timeout", "timed out", 1.5),
        ("500", "HTTP 500", 0),
        ("malformed", "malformed JSON", 0),
        ("truncated", "truncated reply", 0),
        ("trickle", "timed out", 0.05),
    ],
)
def test_faults_are_retried_then_fail_with_a_clear_error(mode, reason, delay):
    with FaultServer(mode, delay=delay) as server:
        backend = make_backend(f"openai:m@{server.base_url}", shared=False, **FAST_RETRY)
        with wall_seconds_under(20, typical_s=1.0), pytest.raises(OpenAIBackendError) as info:
            backend.generate(["hello"], GenerationConfig(max_new_tokens=4))
        message = str(info.value)
        assert isinstance(info.value, LLMBackendError) and isinstance(info.value, SteerEnvsError)
        assert server.base_url in message and reason in message and "3 attempt" in message
        assert server.posts == 3
        assert backend.stats.retries == 2 and backend.stats.failures == 1


def test_client_errors_are_not_retried():
    with FaultServer("404") as server:
        backend = make_backend(f"openai:m@{server.base_url}", shared=False, **FAST_RETRY)
        with pytest.raises(OpenAIBackendError, match="HTTP 404.*model not found.*not retried"):
            backend.next_token_logprobs(["hello"], ["yes"])
        assert server.posts == 1


def test_a_flaky_server_recovers_after_retries(tiny_server, tiny_backend):
    with FaultServer("flaky:2", healthy_url=tiny_server.base_url) as server:
        backend = make_backend(f"openai:tiny@{server.base_url}", shared=False, **FAST_RETRY)
        got = backend.generate([PROMPTS[0]], GenerationConfig(max_new_tokens=6))[0]
        assert got.text == tiny_backend.generate([PROMPTS[0]], GenerationConfig(max_new_tokens=6))[0].text
        assert server.posts == 3 and backend.stats.retries == 2 and backend.stats.failures == 0


def test_nothing_listening_is_a_connection_error():
    with FaultServer("500") as server:
        url = server.base_url
    backend = make_backend(f"openai:m@{url}", shared=False, **FAST_RETRY)
    with pytest.raises(OpenAIBackendError, match="connection failed"):
        backend.generate(["x"], GenerationConfig(max_new_tokens=2))


def test_server_module_runs_as_a_command(tiny_model_dir):
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.servers.openai_server",
            "--backend",
            f"hf:{tiny_model_dir}",
            "--model-name",
            "tiny",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "serving" in proc.stdout.readline()
        remote = make_backend(f"openai:tiny@http://127.0.0.1:{port}", shared=False)
        assert remote.models() == ["tiny"]
        assert remote.generate(["hello"], GenerationConfig(max_new_tokens=3))[0].tokens == 3
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run(
        [sys.executable, "-m", "tests.servers.openai_server", "--backend", "hf:/no/such/dir"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "not a model folder" in bad.stderr and "Traceback" not in bad.stderr


def test_a_stopped_server_releases_its_backend():
    """FastAPI caches endpoint functions at module level; routes that closed over the server kept its backend (a
    1 GB model in the Gemma tests) alive for the rest of the process after the server stopped."""
    import gc
    import weakref

    from tests.llm.support import ScriptedBackend

    backend = ScriptedBackend(["a reply"])
    with OpenAICompatibleServer(backend, model_name="scripted") as server:
        remote = make_backend(server.spec, shared=False)
        assert remote.generate(["hello"], GenerationConfig(max_new_tokens=4))[0].text == "a reply"
    released = weakref.ref(backend)
    del backend, server, remote
    gc.collect()
    assert released() is None
