"""Context limits in the backend layer: every backend knows its model's context, a prompt that outgrows it raises
ContextOverflowError (not a retried service failure), and the stand-in server refuses it as vLLM does."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from steer_envs.errors import ServiceError
from steer_envs.llm.base import (
    ContextOverflowError,
    GenerationConfig,
    LLMBackendError,
    context_length_of,
    is_context_overflow_message,
)
from steer_envs.llm.hf import HFBackend, model_context_length
from steer_envs.llm.openai_client import OpenAIOptions, load_openai_backend
from tests.llm.support import FaultServer
from tests.servers.openai_server import OpenAICompatibleServer, context_overflow_message

#: the wordings servers use for an over-long prompt (vLLM's three, SGLang's, OpenAI's code, llama.cpp's two)
OVERFLOWS = [
    "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, "
    "100 in the completion). Please reduce the length of the messages or completion.",
    "'max_tokens' or 'max_completion_tokens' is too large: 256. This model's maximum context length is 2048 tokens "
    "and your request has 1900 input tokens (256 > 2048 - 1900).",
    "The decoder prompt (length 3000) is longer than the maximum model length of 2048. Make sure that "
    "`max_model_len` is no smaller than the number of text tokens.",
    "The input (3000 tokens) is longer than the model's context length (2048 tokens).",
    "context_length_exceeded",
    "the request exceeds the available context size, try increasing it",
    "Requested tokens (3000) exceed context window of 2048",
]
OTHERS = ["model 'x' not found", "temperature must be >= 0", "Input validation error: `inputs` must be non-empty", ""]


@pytest.mark.parametrize("message", OVERFLOWS)
def test_the_recogniser_accepts_every_servers_wording(message):
    assert is_context_overflow_message(message)
    assert is_context_overflow_message(message.upper().replace(" ", "\n  "))  # case and whitespace do not matter


@pytest.mark.parametrize("message", OTHERS)
def test_the_recogniser_rejects_other_errors(message):
    assert not is_context_overflow_message(message)


def test_an_overflow_is_an_outcome_not_a_service_failure():
    """Executor.step turns ServiceError (and so LLMBackendError) into a dropped, failed episode: an overflow must
    not be one."""
    assert not issubclass(ContextOverflowError, ServiceError)
    assert not issubclass(ContextOverflowError, LLMBackendError)


def test_hf_backend_knows_its_context_and_raises_past_it(tiny_model_dir):
    backend = HFBackend(tiny_model_dir, max_context=64)
    assert backend.context_length == context_length_of(backend) == 64
    assert model_context_length(backend.model.config) == 4096  # the tiny model's own limit, capped by the option
    prompt = "The quick brown fox jumps over the lazy dog. " * 3
    n = backend.count_prompt_tokens(prompt)
    assert n == len(backend.encode_prompts([prompt], room=1)[0])
    fits = GenerationConfig(max_new_tokens=64 - n, temperature=0.0)
    assert backend.generate([prompt], fits)[0].tokens <= 64 - n  # exactly at the limit: served
    with pytest.raises(ContextOverflowError, match="maximum context length is 64") as caught:
        backend.generate([prompt], GenerationConfig(max_new_tokens=64 - n + 1))
    assert (caught.value.prompt_tokens, caught.value.max_new_tokens, caught.value.context_length) == (n, 65 - n, 64)
    with pytest.raises(ContextOverflowError):
        backend.next_token_logprobs([prompt * 3], ["yes", "no"])


def test_stand_in_server_enforces_max_model_len_like_vllm(tiny_backend):
    prompt = "The quick brown fox jumps over the lazy dog. " * 4
    n = tiny_backend.count_prompt_tokens(prompt)
    with OpenAICompatibleServer(tiny_backend, model_name="tiny", max_model_len=n + 8) as server:
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=30) as resp:
            [entry] = json.loads(resp.read())["data"]
        assert entry["max_model_len"] == n + 8  # listed where vLLM lists it
        for max_tokens, expected in ((9, context_overflow_message(n, 9, n + 8)), (8, None)):
            body = json.dumps({"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}).encode()
            request = urllib.request.Request(
                f"{server.base_url}/completions", data=body, headers={"Content-Type": "application/json"}
            )
            if expected is None:
                with urllib.request.urlopen(request, timeout=30) as resp:
                    assert resp.status == 200
                continue
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=30)
            assert caught.value.code == 400
            message = json.loads(caught.value.read())["error"]["message"]
            assert message == expected and "'max_tokens' or 'max_completion_tokens' is too large: 9" in message
            assert is_context_overflow_message(message)
    assert "your request has 50 input tokens" in context_overflow_message(50, 1, 40)


def test_openai_backend_reads_the_listed_context_and_raises_overflow_at_once(tiny_backend):
    prompt = "The quick brown fox jumps over the lazy dog. " * 4
    with OpenAICompatibleServer(tiny_backend, model_name="tiny", max_model_len=48) as server:
        client = load_openai_backend(f"tiny@{server.base_url}", max_retries=3, backoff=5.0)
        assert client.context_length == 48 and client.context_length == 48  # asked once, then cached
        with pytest.raises(ContextOverflowError, match="maximum context length is 48 tokens"):
            client.generate([prompt * 3], GenerationConfig(max_new_tokens=4))
        with pytest.raises(ContextOverflowError):
            client.top_logprobs([prompt * 3], 5)
        served = server.requests_served
        assert client.stats.retries == 0 and client.stats.failures == 0  # not retried (backoff 5 s would show)
        assert client.stats.extra["context_overflows"] == 2
        assert client.generate(["hello"], GenerationConfig(max_new_tokens=4))[0].tokens >= 1
        assert server.requests_served == served + 1
        named = load_openai_backend(f"tiny@{server.base_url}", max_model_len=4096)
        assert named.context_length == 4096  # the option wins over the listing


def test_openai_context_is_none_when_unlisted_or_unreachable():
    with FaultServer("404") as server:  # GET /v1/models is not served: the context is unknown
        client = load_openai_backend(f"m@{server.base_url}", timeout=2)
        assert client.context_length is None
    gone = load_openai_backend("m@http://127.0.0.1:9/v1", timeout=0.5)
    assert gone.context_length is None and context_length_of(object()) is None
    with pytest.raises(Exception, match="max_model_len must be a positive number"):
        OpenAIOptions(max_model_len=0)


def test_an_adapter_listed_without_a_context_reads_its_base_models():
    """vLLM lists a LoRA module with ``parent`` (its base model) and no ``max_model_len``: the adapter's client
    reads the base model's context, so its first request is fitted, not refused."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    listing = {
        "object": "list",
        "data": [
            {"id": "base", "object": "model", "max_model_len": 512},
            {"id": "adapter", "object": "model", "parent": "base"},
            {"id": "orphan", "object": "model", "parent": "nowhere"},
        ],
    }

    class Models(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(listing).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        assert load_openai_backend(f"adapter@{url}", timeout=5).context_length == 512
        assert load_openai_backend(f"base@{url}", timeout=5).context_length == 512
        assert load_openai_backend(f"orphan@{url}", timeout=5).context_length is None
    finally:
        httpd.shutdown()
        httpd.server_close()
