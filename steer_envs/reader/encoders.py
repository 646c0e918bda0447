"""Text encoders the reader can read passages and questions with, chosen by a spec string.

* ``minilm`` / ``minilm:<max_tokens>``: the packaged all-MiniLM-L6-v2 (:mod:`steer_envs.notes.encoder`'s lean forward
  pass, the same vectors as sentence-transformers), truncated to ``max_tokens`` word pieces (default 64: the
  title and first sentences of a passage; the encoder's cost grows with the length and CPU is scarce, while the
  lexical features read the whole passage anyway);
* ``hash:<dim>``: a vocabulary-free random projection of hashed words and bigrams (CRC32 seeds, no weights to
  load): a tiny deterministic stand-in for tests and a cheap option;
* ``lexical``: no embedding at all (the reader uses its lexical and answer-type features only; the cheapest, and
  on a loaded CPU the only one that trains in seconds).

Other encoders register with :func:`register_encoder` (a factory ``arg -> TextEncoder``). An encoder's
``fingerprint`` keys every cache derived from its vectors.
"""

from __future__ import annotations

import zlib
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import SteerEnvsError, unknown_name
from ..registry import LazyRegistry
from ..text import words

DEFAULT_MINILM_TOKENS = 64


@runtime_checkable
class TextEncoder(Protocol):
    """``encode(texts) -> (len(texts), dim)`` float32 array of unit-norm rows (all-zero rows when ``dim == 0``)."""

    dim: int
    fingerprint: str

    def encode(self, texts: list[str]) -> np.ndarray: ...


class NoEncoder:
    dim = 0
    fingerprint = "lexical"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 0), dtype=np.float32)


class HashEncoder:
    """Sum of fixed random unit vectors of the text's hashed words and bigrams, normalised (deterministic)."""

    def __init__(self, dim: int = 64) -> None:
        if dim < 1:
            raise SteerEnvsError(f"hash encoder dimension must be a positive integer, got {dim}")
        self.dim = dim
        self.fingerprint = f"hash{dim}"

    def _vector(self, token: str) -> np.ndarray:
        rng = np.random.default_rng(zlib.crc32(token.encode("utf-8")))
        return rng.standard_normal(self.dim).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            toks = words(text)
            for gram in toks + [f"{a}_{b}" for a, b in zip(toks, toks[1:])]:
                out[row] += self._vector(gram)
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


class MiniLMTextEncoder:
    """The packaged MiniLM, one text at a time (no padding: the vectors do not depend on the batch), truncated."""

    dim = 384

    def __init__(self, max_tokens: int = DEFAULT_MINILM_TOKENS) -> None:
        if not 8 <= max_tokens <= 256:
            raise SteerEnvsError(f"minilm max_tokens must be between 8 and 256, got {max_tokens}")
        from ..notes.encoder import MiniLMEncoder

        self.max_tokens = max_tokens
        self.fingerprint = f"minilm-l6-v2-t{max_tokens}"
        self._encoder = MiniLMEncoder(cache_size=4096)
        self._encoder._tokenizer.enable_truncation(max_tokens)  # the shared encoder truncates at its own limit

    def __getstate__(self):
        return {"max_tokens": self.max_tokens}

    def __setstate__(self, state) -> None:
        type(self).__init__(self, state["max_tokens"])

    def encode(self, texts: list[str]) -> np.ndarray:
        return self._encoder.encode_many(list(texts))


ENCODERS: LazyRegistry = LazyRegistry("reader encoder", "minilm, minilm:<max_tokens>, hash:<dim>, lexical")


def register_encoder(kind: str, factory) -> None:
    """Add an encoder kind: ``factory(argument: str) -> TextEncoder`` (or ``"module:function"``)."""
    ENCODERS.register(kind, factory)


def _int_arg(arg: str, default: int, kind: str) -> int:
    if not arg:
        return default
    try:
        return int(arg)
    except ValueError:
        raise SteerEnvsError(
            f"reader encoder {kind!r} takes an integer argument, got {arg!r} (e.g. '{kind}:{default}')"
        ) from None


register_encoder("minilm", lambda arg: MiniLMTextEncoder(_int_arg(arg, DEFAULT_MINILM_TOKENS, "minilm")))
register_encoder("hash", lambda arg: HashEncoder(_int_arg(arg, 64, "hash")))
register_encoder("lexical", lambda arg: NoEncoder())

_BUILT: dict[str, TextEncoder] = {}


def check_encoder_spec(spec: object) -> tuple[str, str]:
    """``(kind, argument)`` of a valid spec, without loading anything; an unknown kind lists the valid ones."""
    if not isinstance(spec, str) or not spec:
        raise SteerEnvsError(f"a reader encoder spec must be a non-empty string such as 'minilm', got {spec!r}")
    kind, _, arg = spec.partition(":")
    if kind not in ENCODERS:
        raise unknown_name(
            "reader encoder",
            kind,
            list(ENCODERS),
            hint="a spec looks like 'minilm', 'minilm:64', 'hash:64' or 'lexical'",
        )
    if kind in ("minilm", "hash"):
        _int_arg(arg, 64, kind)
    return kind, arg


def make_encoder(spec: str) -> TextEncoder:
    """Build (once per process) the encoder a spec names; an unknown kind lists the valid ones."""
    kind, arg = check_encoder_spec(spec)
    if spec in _BUILT:
        return _BUILT[spec]
    encoder = ENCODERS.resolve(kind)(arg)
    _BUILT[spec] = encoder
    return encoder
