"""The real model shipped on PyPI (Gemma 3 270M, GGUF), through the transformers backend."""

import math
import os

import pytest

from steer_envs.llm import GenerationConfig
from steer_envs.llm.packaged import COMPLETE_MARKER, gemma_model_dir

pytestmark = [pytest.mark.slow, pytest.mark.llm]


def test_gemma_is_converted_once_and_cached(gemma_backend):
    folder = gemma_model_dir()
    # the test's cache (or a model cache the user named explicitly), never ~/.cache behind the user's back
    assert folder.is_relative_to(os.environ.get("STEER_ENVS_MODEL_CACHE") or os.environ["STEER_ENVS_CACHE"])
    assert (folder / COMPLETE_MARKER).is_file() and (folder / "config.json").is_file()
    assert gemma_backend.path == folder
    assert gemma_backend.model.config.model_type.startswith("gemma3")
    assert not hasattr(gemma_backend.model.config, "quantization_config")  # plain weights, loads without gguf


def test_gemma_generates_stops_and_scores_yes_no(gemma_backend):
    prompt = "Question: What is the capital of France?\nAnswer:"
    gen = gemma_backend.generate([prompt], GenerationConfig(max_new_tokens=12, stop=("\n",)))[0]
    assert "Paris" in gen.text and "\n" not in gen.text and gen.tokens <= 12
    probs = gemma_backend.next_token_logprobs(
        [
            "Is Paris the capital of France? Answer yes or no.\nAnswer:",
            "Is Berlin the capital of France? Answer yes or no.\nAnswer:",
        ],
        ["yes", "no"],
    )
    for row in probs:
        assert sum(math.exp(v) for v in row.values()) <= 1 + 1e-6
    assert probs[0]["yes"] > probs[0]["no"]


def test_one_metadata_parse_shares_the_reader_of_a_file_inside_the_block_only(tmp_path):
    import gguf
    import numpy as np

    from steer_envs.llm.packaged import _one_metadata_parse

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "tiny")
    writer.add_tensor("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    for step in (writer.write_header_to_file, writer.write_kv_data_to_file, writer.write_tensors_to_file, writer.close):
        step()
    original = gguf.GGUFReader
    with _one_metadata_parse():
        first, second = gguf.GGUFReader(path), gguf.GGUFReader(str(path))
        assert first is second and isinstance(first, original)  # one parse, the real reader
        assert [t.name for t in first.tensors] == ["w"] and first.tensors[0].data.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert gguf.GGUFReader is original and gguf.GGUFReader(path) is not first  # the library as it was
    with pytest.raises(RuntimeError), _one_metadata_parse():
        raise RuntimeError("a failed conversion")
    assert gguf.GGUFReader is original  # restored on failure too


def test_two_first_loads_at_once_convert_once(tmp_path, monkeypatch):
    """Two processes (here two threads, each with its own lock handle) asking for the model before it is converted:
    the second waits for the first and reads its folder, instead of converting beside it."""
    import threading
    import time

    from steer_envs.llm import packaged

    monkeypatch.setenv("STEER_ENVS_MODEL_CACHE", str(tmp_path))
    running, conversions = [], []

    def convert(final):
        running.append(final)
        assert len(running) == 1, "two conversions ran at once"
        time.sleep(0.3)
        final.mkdir()
        (final / COMPLETE_MARKER).write_text("converted\n")
        conversions.append(final)
        running.remove(final)
        return final

    monkeypatch.setattr(packaged, "_convert_gemma_into", convert)
    folders = []
    threads = [threading.Thread(target=lambda: folders.append(gemma_model_dir())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(conversions) == 1 and folders == [conversions[0]] * 2
