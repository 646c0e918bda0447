"""What every HTTP and WebSocket input of the project's servers must be before it reaches a handler: one home for
the checks (the OpenEnv env server, the retrieval server and the OpenAI-compatible test server all call these).

Why a module of its own: Python's ``json`` accepts inputs that break the code after it. A 5,000-deep array raises
``RecursionError`` (a 500), an integer of more than 4,300 digits raises ``ValueError`` (Python's int-string limit),
and ``"\\ud800"`` decodes to a lone surrogate that no UTF-8 encoder can write back, so the answer that echoes it
fails after the work was done. Checking the decoded value once, before anything changes state, turns each of those
into a 4xx with a ``detail`` that says what was wrong and how to fix it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import SteerEnvsError

#: a lone (unpaired) UTF-16 surrogate: valid in a Python str, impossible in UTF-8 or JSON output
_SURROGATE = re.compile("[\ud800-\udfff]")


class RequestError(SteerEnvsError):
    """A client mistake, answered with ``status`` and ``{"detail": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class JsonLimits:
    """Bounds on a decoded JSON body. ``max_depth``: nesting of arrays and objects (the servers' bodies need 4);
    ``max_int_digits``: digits of one integer (a 64-bit seed has 20)."""

    max_depth: int = 32
    max_int_digits: int = 40


DEFAULT_LIMITS = JsonLimits()


class _Refused(Exception):
    """Raised from inside ``json.loads`` hooks; turned into a :class:`RequestError` by :func:`parse_json`."""


def _int_hook(limits: JsonLimits):
    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.max_int_digits:
            raise _Refused(f"an integer has {len(digits.lstrip('-'))} digits; at most {limits.max_int_digits} "
                           "are accepted (send large numbers as strings)")
        return int(digits)
    return parse_int


def _constant_hook(name: str) -> Any:
    raise _Refused(f"{name} is not JSON; send a number or null")


def parse_json(body: bytes | str, limits: JsonLimits = DEFAULT_LIMITS, *, empty: Any = ...) -> Any:
    """``body`` decoded and checked (:func:`check_value`), or a 422 :class:`RequestError` saying why not.
    ``empty``: what a blank body means (default: a blank body is an error)."""
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestError(422, f"the body is not valid UTF-8 ({exc}); send UTF-8 encoded JSON") from None
    if not body.strip() and empty is not ...:
        return empty
    try:
        value = json.loads(body, parse_int=_int_hook(limits), parse_constant=_constant_hook)
    except _Refused as exc:
        raise RequestError(422, f"the body is not acceptable JSON: {exc}") from None
    except RecursionError:
        raise RequestError(422, f"the body is nested too deeply; at most {limits.max_depth} levels of arrays and "
                                "objects are accepted") from None
    except json.JSONDecodeError as exc:
        raise RequestError(422, f"the body is not valid JSON ({exc})") from None
    check_value(value, limits)
    return value


def check_text(text: str, where: str = "a string") -> str:
    """``text`` unless it holds a lone surrogate (422: it could never be written back as UTF-8 or JSON)."""
    match = _SURROGATE.search(text)
    if match is not None:
        raise RequestError(422, f"{where} holds a lone UTF-16 surrogate (U+{ord(match.group()):04X}) at character "
                                f"{match.start()}; send valid Unicode text (escape pairs must be complete)")
    return text


def _path(parts: tuple[Any, ...]) -> str:
    return "body" + "".join(f"[{p!r}]" for p in parts)


def check_value(value: Any, limits: JsonLimits = DEFAULT_LIMITS) -> Any:
    """``value`` (decoded JSON) unless it nests deeper than ``limits.max_depth`` or holds a string (or key) with a
    lone surrogate. Iterative: a hostile depth cannot exhaust the stack here."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, parts = stack.pop()
        if len(parts) > limits.max_depth:
            raise RequestError(422, f"the body is nested too deeply at {_path(parts[:3])}...; at most "
                                    f"{limits.max_depth} levels of arrays and objects are accepted")
        if isinstance(item, str):
            check_text(item, f"the string at {_path(parts)}")
        elif isinstance(item, dict):
            for key, child in item.items():
                check_text(str(key), f"a key at {_path(parts)}")
                stack.append((child, parts + (key,)))
        elif isinstance(item, list):
            stack.extend((child, parts + (i,)) for i, child in enumerate(item))
    return value


def parse_object(body: bytes | str, limits: JsonLimits = DEFAULT_LIMITS, *, empty: Any = ...) -> dict[str, Any]:
    """:func:`parse_json` that must give a JSON object (422 otherwise)."""
    value = parse_json(body, limits, empty=empty)
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


async def read_body(request: Any, limit: int) -> bytes:
    """A Starlette request's body, refused with 413 past ``limit`` bytes, whether its length was announced or it
    arrives chunked (counted as it streams, so a chunked body is never read whole first)."""
    length = request.headers.get("content-length")
    if length is not None:
        try:
            size = int(length)
        except ValueError:
            raise RequestError(400, f"bad Content-Length {length!r}") from None
        if size > limit:
            raise RequestError(413, f"request body of {size} bytes exceeds the limit of {limit} bytes")
        return await request.body()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"request body of more than {limit} bytes exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


__all__ = ["DEFAULT_LIMITS", "JsonLimits", "RequestError", "check_text", "check_value", "parse_json", "parse_object",
           "read_body", "strict_seed"]
