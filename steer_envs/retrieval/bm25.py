"""The default backend: bm25s over the corpus ``contents``, with the index cached on disk.

The index lives in the user cache folder under a key made from the corpus file's content hash and the BM25
settings, so a second process (or a vectorised env worker) loads it in well under a second instead of
rebuilding it. Parameters default to Lucene's / pyserini's BM25 (k1=0.9, b=0.4) so the two backends agree.

Scores are bm25s' own (``BM25.get_scores``, bit for bit). The top-k selection is ours: bm25s partitions the whole
score array, which is slow when most documents score 0 (numpy's introselect degrades on many equal values: ~6 ms
of a ~7 ms search over 49k passages); :func:`top_k` selects among the positive scores only. Where its answer is
not unique (two of the top ``k+1`` scores tie), the search falls back to bm25s' own selection, so the ranking is
exactly what bm25s returns in every case (a test checks it against ``BM25.retrieve`` on real queries).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
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
        if self.index_dir is not None:  # the first search of a corpus: say why it waits
            print(
                f"building the BM25 index of {len(corpus.passages):,} passages (once, about 10 s; "
                f"cached in {self.index_dir})",
                file=sys.stderr,
                flush=True,
            )
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

        _skip_disabled_bars()
        return bm25s.tokenize(
            texts, stopwords=self.config.stopwords, stemmer=self._stemmer, return_ids=False, show_progress=False
        )

    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        """One tokeniser call for the batch, then each query's scores and top ``k`` (see the module docstring)."""
        from bm25s import selection

        for q in queries:
            check_query(q, k)
        tokens = self._tokenize(list(queries))
        k_eff = min(k, len(self.corpus))
        results: list[list[Hit]] = [[] for _ in queries]
        with self._lock:
            for i, query_tokens in enumerate(tokens):
                ids = self.model.get_tokens_ids(query_tokens) if query_tokens else []
                if not ids:
                    continue
                scores = self.model.get_scores_from_ids(ids)
                best = top_k(scores, k_eff)
                if best is None:  # ties: bm25s' own selection decides, as it always did
                    values, positions = selection.topk(scores, k_eff, backend="auto", sorted=True)
                    best = (np.asarray(values), np.asarray(positions))
                results[i] = [self._hit(int(d), float(v)) for v, d in zip(*best) if v > 0]
        return results

    def _hit(self, position: int, score: float) -> Hit:
        passage = self.corpus.passages[position]
        return Hit(passage.id, passage.title, passage.text, score)


def _skip_disabled_bars() -> None:
    """Make ``bm25s.tokenize`` hand a disabled progress bar's iterable straight back.

    Why: it builds three ``tqdm`` bars a call even with ``show_progress=False`` (``disable=True``), about 75 µs of
    a 90 µs one-query call, paid on every search of every env step. A disabled bar yields its iterable unchanged,
    so the tokens are the same; bars that are asked for still come from tqdm."""
    from bm25s import tokenization

    real = tokenization.tqdm
    if getattr(real, "skips_disabled", False):
        return

    def tqdm(iterable=None, *args, disable=False, **kwargs):
        return iterable if disable else real(iterable, *args, disable=disable, **kwargs)

    tqdm.skips_disabled = True  # type: ignore[attr-defined]
    tokenization.tqdm = tqdm


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(scores, positions)`` of the ``k`` best positive scores, best first, or ``None`` when the answer is not
    unique (a tie among the best ``k + 1``), where only bm25s' own selection gives bm25s' order."""
    candidates = np.flatnonzero(scores > 0)
    values = scores[candidates]
    if len(candidates) > k:
        keep = np.argpartition(values, len(values) - k - 1)[-(k + 1) :]
        candidates, values = candidates[keep], values[keep]
    order = np.argsort(-values, kind="stable")
    values, candidates = values[order], candidates[order]
    if len(values) > 1 and bool(np.any(values[1:] == values[:-1])):
        return None
    return values[:k], candidates[:k]
