"""Encoder vectors of texts, cached on disk by content hash (``$STEER_ENVS_CACHE/reader/embeddings/``).

Why by content and not by corpus id: the reader reads passages out of observations, where only the text is
known; hashing the text finds the vector of any passage already met (training, evaluation, an earlier episode)
without a corpus lookup, and works for any executor or corpus. One file per encoder fingerprint; it only grows.
Encoding is the expensive part on CPU (MiniLM: ~0.1 s a passage on a loaded 2-core machine), so nothing is
encoded twice across processes.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from ..atomic import atomic_write_bytes
from ..paths import cache_dir
from .encoders import TextEncoder

SAVE_EVERY = 1024


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8", "replace")).digest()[:12]


class EmbeddingStore:
    """``vectors(texts)``: cached rows where known, the encoder's otherwise (then saved)."""

    def __init__(self, encoder: TextEncoder, root: str | Path | None = None) -> None:
        self.encoder = encoder
        folder = Path(root) if root is not None else cache_dir("reader", "embeddings")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{encoder.fingerprint}.npz"
        self._rows: dict[bytes, np.ndarray] = {}
        self._dirty = 0
        self._lock = threading.Lock()
        self.encoded = 0  # texts this store had to encode (the rest came from the cache)
        if encoder.dim and self.path.exists():
            with np.load(self.path) as data:
                keys, vecs = data["keys"], data["vectors"]
            self._rows = {bytes(k): v for k, v in zip(keys, vecs)}

    def __len__(self) -> int:
        return len(self._rows)

    def vectors(self, texts: list[str], progress: bool = False, save: bool = True) -> np.ndarray:
        """Rows for ``texts``; ``save=False`` (online use, one observation at a time) writes the file only every
        :data:`SAVE_EVERY` new texts instead of after each call."""
        dim = self.encoder.dim
        if not dim:
            return np.zeros((len(texts), 0), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._rows))
        if missing:
            by_key = {k: t for k, t in zip(keys, texts)}
            for start in range(0, len(missing), 64):
                chunk = missing[start : start + 64]
                vecs = self.encoder.encode([by_key[k] for k in chunk])
                with self._lock:
                    self._rows.update(zip(chunk, vecs.astype(np.float32)))
                    self._dirty += len(chunk)
                self.encoded += len(chunk)
                if progress:
                    print(f"  encoded {start + len(chunk)}/{len(missing)} texts", flush=True)
                if self._dirty >= SAVE_EVERY:
                    self.save()
            if save:
                self.save()
        return np.stack([self._rows[k] for k in keys]) if keys else np.zeros((0, dim), dtype=np.float32)

    def save(self) -> None:
        with self._lock:
            if not self._dirty:
                return
            keys = np.array(list(self._rows), dtype="S12")
            vecs = np.stack(list(self._rows.values())).astype(np.float32)
            self._dirty = 0

        def write(fh) -> None:
            np.savez(fh, keys=keys, vectors=vecs)

        atomic_write_bytes(self.path, write)
