"""The passage corpus, with id lookup.

Two on-disk forms are read: the shared schema (``{"id", "title", "text", "contents"}``) and a Search-R1 /
pyserini ``JsonCollection`` (``{"id", "contents"}`` with ``contents = "Title"\\ntext``, e.g. wiki-18).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataFormatError, DataNotFoundError
from ..paths import resolve_data_dir
from .jsonl import iter_jsonl
from .records import Passage

DEFAULT_CORPUS = Path("corpus") / "passages.jsonl.gz"


@dataclass
class Corpus:
    """An ordered list of passages with O(1) lookup by id. ``path`` identifies the source file (cache keys)."""

    passages: list[Passage]
    path: Path | None = None
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    _by_title: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {p.id: i for i, p in enumerate(self.passages)}
        if len(self._index) != len(self.passages):
            raise DataFormatError(f"corpus {self.path}: passage ids are not unique")

    def __len__(self) -> int:
        return len(self.passages)

    def __iter__(self) -> Iterator[Passage]:
        return iter(self.passages)

    def __contains__(self, pid: object) -> bool:
        return pid in self._index

    def __getitem__(self, pid: str) -> Passage:
        try:
            return self.passages[self._index[pid]]
        except KeyError:
            raise DataNotFoundError(f"passage id {pid!r} is not in the corpus {self.path}") from None

    def position(self, pid: str) -> int:
        """Row number of a passage (the document index used by search backends)."""
        return self._index[pid]

    def get_many(self, pids: Sequence[str]) -> list[Passage]:
        return [self[p] for p in pids]

    def same_title(self, pid: str) -> tuple[str, ...]:
        """Ids of every passage whose title equals ``pid``'s (the corpus holds several passages of one article)."""
        if not self._by_title:
            for p in self.passages:
                self._by_title.setdefault(_title_key(p.title), []).append(p.id)
        if pid not in self._index:
            return (pid,)
        return tuple(self._by_title.get(_title_key(self[pid].title), [pid]))


def _title_key(title: str) -> str:
    return " ".join(title.strip().strip('"').lower().split())


def _passage_from_dict(obj: dict, where: str) -> Passage:
    pid = obj.get("id", obj.get("docid", obj.get("_id")))
    if pid is None:
        raise DataFormatError(f"{where}: passage has no 'id'")
    if "title" in obj and "text" in obj:
        return Passage(str(pid), str(obj["title"]), str(obj["text"]))
    if "contents" in obj:
        return Passage.from_contents(str(pid), str(obj["contents"]))
    raise DataFormatError(f"{where}: passage needs 'contents' or both 'title' and 'text'")


_CORPUS_CACHE: dict[Path, Corpus] = {}


def load_corpus(path: str | os.PathLike | None = None, data_dir: str | os.PathLike | None = None) -> Corpus:
    """Load a corpus file (default: the shared data's ``corpus/passages.jsonl.gz``); memoised per process."""
    resolved = Path(path) if path is not None else resolve_data_dir(data_dir) / DEFAULT_CORPUS
    resolved = resolved.resolve()
    if resolved not in _CORPUS_CACHE:
        passages = [_passage_from_dict(obj, f"{resolved}:{n}") for n, obj in iter_jsonl(resolved)]
        _CORPUS_CACHE[resolved] = Corpus(passages, resolved)
    return _CORPUS_CACHE[resolved]
