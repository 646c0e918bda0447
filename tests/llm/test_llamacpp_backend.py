"""llama.cpp backend (optional extra): runs only where llama-cpp-python is installed."""

import pytest

from steer_envs.llm import GenerationConfig, make_backend

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is an optional extra (steer-envs[llamacpp])")


@pytest.mark.slow
@pytest.mark.llm
def test_llamacpp_runs_the_packaged_gguf():
    backend = make_backend("llamacpp:gemma-3-270m", n_ctx=1024)
    gen = backend.generate(
        ["Question: What is the capital of France?\nAnswer:"], GenerationConfig(max_new_tokens=8, stop=("\n",))
    )[0]
    assert gen.text and "\n" not in gen.text
    probs = backend.next_token_logprobs(["Is Paris in France? Answer yes or no.\nAnswer:"], ["yes", "no"])[0]
    assert set(probs) == {"yes", "no"}
