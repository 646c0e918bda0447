"""A thread-safe, bounded memo of a text function: what the note encoder and the note reader keep per string.

Why its own home: both wrap an expensive pure function of a note's text (a MiniLM forward pass, a reading) that
a threaded rollout pool calls from many threads. The lock guards only the dictionary: the computation runs
outside it, so two threads may compute the same value once each, which is harmless for a pure function and
keeps one slow forward pass from blocking every other thread's cache hits.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class TextMemo(Generic[V]):
    """``memo(text, compute)``: ``compute(text)`` remembered for the ``size`` most recently used texts (``size`` 0:
    nothing is remembered, as a ``cache_size=0`` encoder or reader always did)."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"a memo's size is a number of entries (0: remember nothing), got size={size}")
        self.size = size
        self._entries: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str, compute: Callable[[str], V]) -> V:
        if not self.size:
            return compute(text)
        with self._lock:
            hit = self._entries.get(text)
            if hit is not None:
                self._entries.move_to_end(text)
                return hit
        value = compute(text)
        with self._lock:
            self._entries[text] = value
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
