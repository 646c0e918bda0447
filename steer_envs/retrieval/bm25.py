"""The default backend: bm25s over the corpus ``contents``, with the index cached on disk.

The index lives in the user cache folder under a key made from the corpus file's content hash and the BM25
settings, so a second process (or a vectorised env worker) loads it in well under a second instead of
rebuilding it. Parameters default to Lucene's / pyserini's BM25 (k1=0.9, b=0.4) so the two backends agree.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..data.corpus import Corpus
from ..paths import cache_dir, file_fingerprint
from .base import Hit, check_query

INDEX_FORMAT = 1


@dataclass(frozen=True)
class BM25Config:
    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"
    stemmer: str = "english"
    stopwords: str = "en"


class BM25sRetriever:
    """BM25 over a :class:`Corpus`. ``last_build_seconds`` is ``None`` when the index came from the cache."""

    name = "bm25s"

    def __init__(self, corpus: Corpus, config: BM25Config | None = None, cache: bool = True) -> None:
        import bm25s
        import Stemmer

        self.corpus = corpus
        self.config = config or BM25Config()
        self._stemmer = Stemmer.Stemmer(self.config.stemmer) if self.config.stemmer else None
        self._lock = threading.Lock()  # bm25s is not documented thread-safe; the HTTP server uses threads
        self.loaded_from_cache = False
        self.index_dir: Path | None = None
        key = self._cache_key() if cache and corpus.path is not None else None
        if key is not None:
            self.index_dir = cache_dir("bm25s", key)
            if (self.index_dir / "params.index.json").is_file():
                self.model = bm25s.BM25.load(str(self.index_dir), mmap=False)
                self.loaded_from_cache = True
                return
        self.model = bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method)
        tokens = self._tokenize([p.contents for p in corpus.passages])
        self.model.index(tokens, show_progress=False)
        if self.index_dir is not None:
            self._save_atomically(self.index_dir)

    def _cache_key(self) -> str:
        salt = json.dumps(asdict(self.config), sort_keys=True) + f"|v{INDEX_FORMAT}"
        return file_fingerprint(self.corpus.path, salt)  # type: ignore[arg-type]

    def _save_atomically(self, target: Path) -> None:
        """Write into a temp folder and rename, so a concurrent reader never sees half an index."""
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp"))
        self.model.save(str(tmp), show_progress=False)
        try:
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        except OSError:  # another process won the race; its index is identical
            shutil.rmtree(tmp, ignore_errors=True)

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        import bm25s

        return bm25s.tokenize(
            texts, stopwords=self.config.stopwords, stemmer=self._stemmer, return_ids=False, show_progress=False
        )

    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        for q in queries:
            check_query(q, k)
        tokens = self._tokenize(list(queries))
        k_eff = min(k, len(self.corpus))
        results: list[list[Hit]] = [[] for _ in queries]
        nonempty = [i for i, t in enumerate(tokens) if t and any(tok in self.model.vocab_dict for tok in t)]
        if nonempty:
            with self._lock:
                docs, scores = self.model.retrieve(
                    [tokens[i] for i in nonempty], k=k_eff, show_progress=False, n_threads=1
                )
            for row, i in enumerate(nonempty):
                results[i] = [
                    self._hit(int(d), float(s)) for d, s in zip(np.asarray(docs[row]), np.asarray(scores[row])) if s > 0
                ]
        return results

    def _hit(self, position: int, score: float) -> Hit:
        passage = self.corpus.passages[position]
        return Hit(passage.id, passage.title, passage.text, score)
