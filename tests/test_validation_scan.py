"""``steer_envs.validation.scan_json`` measures a JSON text without decoding it; the servers refuse bodies on its
figures before ``json.loads`` runs. Checked against the decoded value for generated JSON (strings full of
brackets, quotes, backslashes and digits, numbers of every length, deep and wide nesting), and on the hostile
shapes the servers meet."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steer_envs.validation import JsonLimits, RequestError, parse_json, scan_json

tricky_text = st.text(alphabet=st.sampled_from(list('[]{},"\\:0123456789 ab\u00e9\U0001f642')), max_size=20)
leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | tricky_text
values = st.recursive(
    leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky_text, inner, max_size=4), max_leaves=30
)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


def _items(value) -> int:
    """Containers plus the commas between their members: what ``scan_json`` counts."""
    if isinstance(value, (list, dict)):
        members = list(value.values()) if isinstance(value, dict) else value
        return 1 + max(len(members) - 1, 0) + sum(_items(v) for v in members)
    return 0


def _longest_integer(value) -> int:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return 0
    if isinstance(value, int):
        return len(str(abs(value)))
    if isinstance(value, float):
        return max(len(part) for part in repr(value).replace("-", "e").split("e")[0].split("."))
    members = value.values() if isinstance(value, dict) else value
    return max((_longest_integer(v) for v in members), default=0)


@settings(max_examples=300, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(value=values, ascii_only=st.booleans())
def test_the_scan_agrees_with_the_decoded_value(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    shape = scan_json(text.encode("utf-8"))
    assert (shape.depth, shape.items) == (_depth(value), _items(value)), text
    assert shape.longest_integer >= _longest_integer(value) or _longest_integer(value) == 0, text
    assert shape.surrogate_escape == ("\\ud83d" in text), text


@pytest.mark.parametrize(
    "body,status,message",
    [
        (b"[" * 500_000 + b"]" * 500_000, 422, "nested too deeply"),
        (b"[" + b",".join([b"[" * 30 + b"[0]" + b"]" * 30] * 15_000) + b"]", 413, "at most 10000"),
        (b'{"s": "' + b"[" * 100 + b'"}', 200, None),
        (b'{"s": "\\\\"' + b', "t": ' + b"[" * 33 + b"]" * 33 + b"}", 422, "nested too deeply"),
        (b'{"s": "\\"' + b"[" * 33 + b'"}', 200, None),
        (b'{"n": ' + b"1" * 41 + b"}", 422, "41 digits"),
        (b'{"n": "' + b"1" * 5000 + b'"}', 200, None),
        (b'["\\ud800"]', 422, "lone UTF-16 surrogate"),
        (b'["\\ud83d\\ude00"]', 200, None),
    ],
    ids=[
        "deep",
        "wide-at-the-limit",
        "brackets-in-a-string",
        "escaped-backslash-then-deep",
        "escaped-quote",
        "long-integer",
        "long-digit-string",
        "lone-surrogate",
        "surrogate-pair",
    ],
)
def test_hostile_shapes_are_refused_before_decoding_and_the_rest_decode(body, status, message):
    if status == 200:
        assert parse_json(body) == json.loads(body)
        return
    with pytest.raises(RequestError) as refused:
        parse_json(body)
    assert refused.value.status == status and message in str(refused.value)


def test_a_lower_limit_is_the_one_applied():
    limits = JsonLimits(max_depth=2, max_int_digits=3, max_items=4)
    assert parse_json(b"[[1, 2], 3]", limits) == [[1, 2], 3]
    for body, message in (
        (b"[[[1]]]", "nested too deeply"),
        (b"[1, 2, 3, 4, 5]", "at most 4"),
        (b"[1234]", "4 digits"),
    ):
        with pytest.raises(RequestError, match=message):
            parse_json(body, limits)
