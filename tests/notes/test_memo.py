"""The note encoder's and reader's memo: bounded, least recently used first out, thread-safe, and a pure cache."""

from __future__ import annotations

import threading

import pytest

from steer_envs.notes.memo import TextMemo


def test_a_hit_skips_the_computation_and_the_least_recently_used_text_leaves_first():
    calls: list[str] = []

    def compute(text: str) -> str:
        calls.append(text)
        return text.upper()

    memo: TextMemo[str] = TextMemo(2)
    assert memo("a", compute) == "A" and memo("b", compute) == "B"
    assert memo("a", compute) == "A" and calls == ["a", "b"]  # a hit: no second call; "a" is now the most recent
    memo("c", compute)  # evicts "b", the least recently used
    assert len(memo) == 2
    memo("a", compute)
    memo("b", compute)
    assert calls == ["a", "b", "c", "b"]


def test_threads_read_one_memo_without_losing_entries_beyond_its_size():
    memo: TextMemo[int] = TextMemo(64)
    texts = [f"note {i % 100}" for i in range(2000)]

    def work(offset: int) -> None:
        for t in texts[offset:] + texts[:offset]:
            assert memo(t, len) == len(t)

    threads = [threading.Thread(target=work, args=(k * 37,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(memo) == 64


def test_a_memo_of_size_zero_remembers_nothing_and_a_negative_size_is_refused():
    calls: list[str] = []
    memo: TextMemo[str] = TextMemo(0)
    assert memo("a", lambda t: calls.append(t) or t) == "a" and memo("a", lambda t: calls.append(t) or t) == "a"
    assert calls == ["a", "a"] and len(memo) == 0
    with pytest.raises(ValueError, match="remember nothing"):
        TextMemo(-1)
