"""What every HTTP and WebSocket input of the project's servers must be before it reaches a handler: one home for
the checks (the OpenEnv env server, the retrieval server and the OpenAI-compatible test server all call these).

Why a module of its own: Python's ``json`` accepts inputs that break the code after it. A 5,000-deep array raises
``RecursionError`` (a 500), an integer of more than 4,300 digits raises ``ValueError`` (Python's int-string limit),
and ``"\\ud800"`` decodes to a lone surrogate that no UTF-8 encoder can write back, so the answer that echoes it
fails after the work was done. Checking once, before anything changes state, turns each of those into a 4xx with a
``detail`` that says what was wrong and how to fix it.

Why the checks read the raw text first (:func:`scan_json`): decoding is the expensive part, and it runs on the
server's event loop. A megabyte of ``[[[...[0]...]]]`` nested just past the limit and repeated took 0.43 s to decode
(half a million lists) before a check on the decoded value could refuse it, stalling every other client for that
long. The scan measures nesting, the number of values and the longest integer in numpy at a few ms per megabyte, so
such a body is refused before ``json.loads`` runs, and what is decoded is bounded by :attr:`JsonLimits.max_items`.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import SteerEnvsError

#: a lone (unpaired) UTF-16 surrogate: valid in a Python str, impossible in UTF-8 or JSON output
_SURROGATE = re.compile("[\ud800-\udfff]")
#: a JSON escape of a UTF-16 surrogate (paired or not): only then can a decoded string hold a lone one
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class RequestError(SteerEnvsError):
    """A client mistake, answered with ``status`` and ``{"detail": message}``. ``close``: answer with ``Connection:
    close`` (default for 400, 411 and 413, and whenever the body was refused before all of it arrived: the rest of
    it must not be read as the next request, nor drained for nothing)."""

    def __init__(self, status: int, message: str, *, close: bool | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.close = status in (400, 411, 413) if close is None else close


@dataclass(frozen=True)
class JsonLimits:
    """Bounds on a JSON body. ``max_depth``: nesting of arrays and objects (the servers' bodies need 4);
    ``max_int_digits``: digits of one integer (a 64-bit seed has 20); ``max_items``: arrays, objects and the
    values they hold, in all (the largest body the servers take, 512 queries, has about 520)."""

    max_depth: int = 32
    max_int_digits: int = 40
    max_items: int = 10_000


@dataclass(frozen=True)
class JsonShape:
    """What :func:`scan_json` measures of a JSON text without decoding it (exact for valid JSON; for invalid JSON
    the decoder that runs next refuses it anyway). ``items``: arrays and objects plus the commas between values,
    an upper bound of the values held minus one per non-empty container."""

    depth: int
    items: int
    longest_integer: int
    surrogate_escape: bool


DEFAULT_LIMITS = JsonLimits()


class _Refused(Exception):
    """Raised from inside ``json.loads`` hooks; turned into a :class:`RequestError` by :func:`parse_json`."""


def _int_hook(limits: JsonLimits):
    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.max_int_digits:
            raise _Refused(
                f"an integer has {len(digits.lstrip('-'))} digits; at most {limits.max_int_digits} "
                "are accepted (send large numbers as strings)"
            )
        return int(digits)

    return parse_int


def _constant_hook(name: str) -> Any:
    raise _Refused(f"{name} is not JSON; send a number or null")


def _escaped_quotes(raw: np.ndarray) -> np.ndarray:
    """Positions of the quotes preceded by an odd run of backslashes (escaped: inside a string)."""
    quotes, slashes = np.flatnonzero(raw == 0x22), np.flatnonzero(raw == 0x5C)
    if not slashes.size or not quotes.size:
        return quotes[:0]
    run_starts = np.ones(slashes.size, bool)
    run_starts[1:] = np.diff(slashes) != 1
    first_of_run = slashes[np.flatnonzero(run_starts)][np.cumsum(run_starts) - 1]
    at = np.minimum(np.searchsorted(slashes, quotes - 1), slashes.size - 1)
    return quotes[(slashes[at] == quotes - 1) & ((quotes - first_of_run[at]) % 2 == 1)]


#: bytes of text whose structural positions are summed at once: the first block, and the largest (blocks double),
#: so a hostile body stops the scan after a few KiB and a long ordinary one costs a few dozen numpy calls
_FIRST_BLOCK, _LAST_BLOCK = 1 << 12, 1 << 18


def scan_json(data: bytes, stop: JsonLimits | None = None) -> JsonShape:
    """The nesting depth, item count, longest integer and surrogate escapes of a JSON text, measured on its bytes.

    Linear and cheap (a few ms for 4 MB): whole-text numpy passes are element-wise comparisons only; the running
    sums (in or out of a string, the depth) run over the structural positions alone (quotes, brackets, commas, the
    first digit of each number), which ordinary text has few of. With ``stop``, the scan ends at the first block of
    text past its depth or item limit (the figures are then lower bounds, enough to refuse): a hostile body that
    is all brackets costs one block, not its whole length."""
    raw = np.frombuffer(data, np.uint8)
    is_quote = raw == 0x22
    if b"\\" in data:
        is_quote[_escaped_quotes(raw)] = False
    is_open = (raw == 0x5B) | (raw == 0x7B)
    is_close = (raw == 0x5D) | (raw == 0x7D)
    is_comma = raw == 0x2C
    edges = np.diff(((raw >= 0x30) & (raw <= 0x39)).view(np.int8), prepend=np.int8(0), append=np.int8(0))
    run_start = edges[:-1] == 1
    run_lengths = np.flatnonzero(edges == -1) - np.flatnonzero(run_start)
    structural = is_quote | is_open | is_close | is_comma | run_start
    parity = level = depth = items = longest = runs_seen = lo = 0
    block = _FIRST_BLOCK
    while lo < raw.size:
        at = np.flatnonzero(structural[lo : lo + block]) + lo
        lo, block = lo + block, min(2 * block, _LAST_BLOCK)
        if not at.size:
            continue
        quote_here = is_quote[at]
        # outside every string: an even number of quotes up to here (and not a quote itself)
        odd = (np.cumsum(quote_here, dtype=np.int32) + parity) & 1
        parity = int(odd[-1])
        outside = (odd == 0) & ~quote_here
        opens, closes = is_open[at] & outside, is_close[at] & outside
        levels = np.cumsum(opens.view(np.int8) - closes.view(np.int8), dtype=np.int32) + level
        depth, level = max(depth, int(levels.max())), int(levels[-1])
        items += int(np.count_nonzero(opens) + np.count_nonzero(is_comma[at] & outside))
        starts = run_start[at]  # each number's first digit appears in ``at`` in order, one per run
        numbers = run_lengths[runs_seen : runs_seen + int(np.count_nonzero(starts))][outside[starts]]
        runs_seen += int(np.count_nonzero(starts))
        longest = max(longest, int(numbers.max()) if numbers.size else 0)
        if stop is not None and (depth > stop.max_depth or items > stop.max_items):
            break
    return JsonShape(depth, items, longest, _SURROGATE_ESCAPE.search(data) is not None)


def parse_json(body: bytes | str, limits: JsonLimits = DEFAULT_LIMITS, *, empty: Any = ...) -> Any:
    """``body`` decoded and checked, or a 4xx :class:`RequestError` saying why not: 422 for text that is not UTF-8,
    not JSON, nested deeper than ``limits.max_depth``, with an integer longer than ``limits.max_int_digits``, NaN or
    a lone surrogate; 413 for more than ``limits.max_items`` items. The limits are checked on the raw text
    (:func:`scan_json`) before anything is decoded. ``empty``: what a blank body means (default: an error)."""
    if isinstance(body, (bytes, bytearray)):
        data = bytes(body)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestError(422, f"the body is not valid UTF-8 ({exc}); send UTF-8 encoded JSON") from None
        raw_surrogate = False  # strict UTF-8 cannot encode a surrogate
    else:
        text, data = body, body.encode("utf-8", "surrogatepass")
        raw_surrogate = _SURROGATE.search(text) is not None
    if not text.strip() and empty is not ...:
        return empty
    shape = scan_json(data, limits)
    _check_shape(shape, limits)
    # the int hook costs a Python call per integer: only for a text that holds a longer run of digits
    hooks: dict[str, Any] = {"parse_constant": _constant_hook}
    if shape.longest_integer > limits.max_int_digits:
        hooks["parse_int"] = _int_hook(limits)
    try:
        value = json.loads(text, **hooks)
    except _Refused as exc:
        raise RequestError(422, f"the body is not acceptable JSON: {exc}") from None
    except RecursionError:  # the scan refuses such depths first; kept for any text it misjudges
        raise RequestError(
            422, f"the body is nested too deeply; at most {limits.max_depth} levels of arrays and objects are accepted"
        ) from None
    except json.JSONDecodeError as exc:
        raise RequestError(422, f"the body is not valid JSON ({exc})") from None
    if shape.surrogate_escape or raw_surrogate:
        _check_surrogates(value, limits)
    return value


def _check_shape(shape: JsonShape, limits: JsonLimits, *, partial: bool = False) -> None:
    """The 422 (nesting) or 413 (items) for a shape past ``limits``; ``partial``: measured on the part of a body
    that has arrived (the connection is closed, the rest is never read)."""
    if shape.depth > limits.max_depth:
        raise RequestError(
            422,
            f"the body is nested too deeply; at most {limits.max_depth} levels of arrays and objects are accepted",
            close=partial or None,
        )
    if shape.items > limits.max_items:
        raise RequestError(
            413,
            f"the body holds {'at least ' if partial else 'about '}{shape.items} arrays, "
            f"objects and values; at most {limits.max_items} are accepted, split the request",
        )


async def check_prefix(prefix: bytes, limits: JsonLimits = DEFAULT_LIMITS) -> None:
    """Refuse a body from the part that has arrived, when that part already nests too deeply or holds too many
    items (both can only grow with the rest): a hostile megabyte costs the server its first block, not its whole
    length. Run by the servers' body readers as the body grows (:class:`PrefixChecks`)."""
    if len(prefix) <= OFF_LOOP_BYTES:
        shape = scan_json(prefix, limits)
    else:
        shape = await asyncio.to_thread(scan_json, prefix, limits)
    _check_shape(shape, limits, partial=True)


class PrefixChecks:
    """When a growing body is due a :func:`check_prefix`: at 16 KiB, then each time it has grown eightfold (the
    scans add at most a seventh to the one over the whole body)."""

    def __init__(self, limits: JsonLimits = DEFAULT_LIMITS) -> None:
        self.limits, self.next_at = limits, 16 * 1024

    async def grown(self, chunks: list[bytes], size: int) -> None:
        if size < self.next_at:
            return
        while self.next_at <= size:
            self.next_at *= 8
        whole = b"".join(chunks)
        chunks[:] = [whole]
        await check_prefix(whole, self.limits)


#: bodies longer than this are decoded on a worker thread (:func:`parse_json_async`)
OFF_LOOP_BYTES = 64 * 1024


async def parse_json_async(body: bytes | str, limits: JsonLimits = DEFAULT_LIMITS, *, empty: Any = ...) -> Any:
    """:func:`parse_json` for a server's event loop: a large body is checked and decoded on a worker thread, so
    the loop keeps serving other clients meanwhile (numpy's passes release the GIL; ``json.loads`` holds it, but
    for at most :attr:`JsonLimits.max_items` values)."""
    if len(body) <= OFF_LOOP_BYTES:
        return parse_json(body, limits, empty=empty)
    return await asyncio.to_thread(parse_json, body, limits, empty=empty)


def _check_surrogates(value: Any, limits: JsonLimits) -> None:
    """422 when a decoded value holds a lone surrogate: encoding it as UTF-8 finds one at C speed, and only then the
    walk of :func:`check_value` runs to say where."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        check_value(value, limits)


def check_text(text: str, where: str = "a string") -> str:
    """``text`` unless it holds a lone surrogate (422: it could never be written back as UTF-8 or JSON)."""
    match = _SURROGATE.search(text)
    if match is not None:
        raise RequestError(
            422,
            f"{where} holds a lone UTF-16 surrogate (U+{ord(match.group()):04X}) at character "
            f"{match.start()}; send valid Unicode text (escape pairs must be complete)",
        )
    return text


def _path(parts: tuple[Any, ...]) -> str:
    return "body" + "".join(f"[{p!r}]" for p in parts)


def check_value(value: Any, limits: JsonLimits = DEFAULT_LIMITS) -> Any:
    """``value`` (decoded JSON) unless it nests deeper than ``limits.max_depth`` or holds a string (or key) with a
    lone surrogate. Iterative: a hostile depth cannot exhaust the stack here; paths are spelled out only for the
    message of a value that fails."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limits.max_depth:
            _refuse_with_path(value, limits)
        if isinstance(item, str):
            if _SURROGATE.search(item):
                _refuse_with_path(value, limits)
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(str(key)):
                    _refuse_with_path(value, limits)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return value


def _refuse_with_path(value: Any, limits: JsonLimits) -> None:
    """The 422 for a value :func:`check_value` found at fault, naming where (a second walk, with paths)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, parts = stack.pop()
        if len(parts) > limits.max_depth:
            raise RequestError(
                422,
                f"the body is nested too deeply at {_path(parts[:3])}...; at most "
                f"{limits.max_depth} levels of arrays and objects are accepted",
            )
        if isinstance(item, str):
            check_text(item, f"the string at {_path(parts)}")
        elif isinstance(item, dict):
            for key, child in item.items():
                check_text(str(key), f"a key at {_path(parts)}")
                stack.append((child, parts + (key,)))
        elif isinstance(item, list):
            stack.extend((child, parts + (i,)) for i, child in enumerate(item))


def parse_object(body: bytes | str, limits: JsonLimits = DEFAULT_LIMITS, *, empty: Any = ...) -> dict[str, Any]:
    """:func:`parse_json` that must give a JSON object (422 otherwise)."""
    return require_object(parse_json(body, limits, empty=empty))


def require_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object (dict), else a 422 that names what it is."""
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise RequestError(422, f"the body must be a JSON object, got {kind}")
    return value


def strict_seed(value: Any) -> int | None:
    """A seed: ``None`` or a non-negative integer (``true`` is a bool, not a seed; a string is not a number)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RequestError(422, f"seed must be a non-negative integer or null, got {value!r}")
    return value


async def read_body(request: Any, limit: int, limits: JsonLimits | None = DEFAULT_LIMITS) -> bytes:
    """A Starlette request's body, refused with 413 past ``limit`` bytes: on its announced length before any of it
    is read, or as it streams when chunked. With ``limits`` (JSON bodies), a body whose first part already nests too
    deeply or holds too many items is refused as it arrives (:class:`PrefixChecks`)."""
    length = request.headers.get("content-length")
    if length is not None:
        try:
            size = int(length)
        except ValueError:
            raise RequestError(400, f"bad Content-Length {length!r}") from None
        if size > limit:
            raise RequestError(413, f"request body of {size} bytes exceeds the limit of {limit} bytes")
    checks = PrefixChecks(limits) if limits is not None else None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"request body of more than {limit} bytes exceeds the limit of {limit} bytes")
        chunks.append(chunk)
        if checks is not None:
            await checks.grown(chunks, size)
    return b"".join(chunks)


__all__ = [
    "DEFAULT_LIMITS",
    "OFF_LOOP_BYTES",
    "JsonLimits",
    "JsonShape",
    "PrefixChecks",
    "RequestError",
    "check_prefix",
    "check_text",
    "check_value",
    "parse_json",
    "parse_json_async",
    "parse_object",
    "read_body",
    "require_object",
    "scan_json",
    "strict_seed",
]
