"""The one loader and validator of simulated-executor profiles (the searcher's ``sim/profiles/*.json`` and the
pipeline's ``pipeline/profiles/*.json``).

Why one: the two copies disagreed (the pipeline rejected ``true`` where a probability was expected, the simulator
took it as 1.0), and a profile is hand-written data whose typos must fail loudly, the same way for both. What
differs between the two is declared in a :class:`ProfileSchema` (the dataclass, the shipped folder, which numbers
are probabilities, which are positive, integer minimums, and any extra checks); everything else (unknown and
missing keys, per-benchmark overrides, types, ranges, file lookup, JSON errors) is here. Every error names the
profile file (or ``<dict>``) and the key, and says what value is expected.

Types are read from the dataclass: a ``float`` field takes a JSON number, an ``int`` field a JSON integer, and a
boolean is never a number (``True`` is an ``int`` in Python, not in a profile).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import SteerEnvsError, unknown_name

#: keys every profile may leave out (filled from the file name and an empty description)
_AUTO_KEYS = frozenset({"name", "description"})
#: keys a per-benchmark override may not set
_NOT_OVERRIDABLE = frozenset({"name", "description", "benchmarks", "thought_sources"})


@dataclass(frozen=True)
class ProfileSchema:
    """What one kind of profile is: ``kind`` names it in errors ("simulator profile"), ``cls`` is its frozen
    dataclass, ``directory`` holds the shipped ``<name>.json`` files. Every ``float`` field is a probability in
    [0, 1] unless listed in ``positive`` (a number > 0); every ``int`` field is at least ``int_minimum`` (or its
    entry in ``int_minimums``). ``extra`` checks the remaining fields (non-number values) of a dict or override."""

    kind: str
    cls: type
    directory: Path
    positive: frozenset[str] = frozenset()
    int_minimum: int = 1
    int_minimums: Mapping[str, int] = field(default_factory=dict)
    extra: Callable[[dict, str], None] | None = None
    hint: str = ""

    @property
    def field_types(self) -> dict[str, str]:
        return {f.name: str(f.type) for f in fields(self.cls)}

    @property
    def required(self) -> frozenset[str]:
        """Fields without a default (the profile must give them), except the name and description."""
        return (
            frozenset(f.name for f in fields(self.cls) if f.default is MISSING and f.default_factory is MISSING)
            - _AUTO_KEYS
        )

    def error(self, where: str, message: str) -> SteerEnvsError:
        return SteerEnvsError(f"{self.kind} {where}: {message}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_keys(
    schema: ProfileSchema,
    obj: dict,
    where: str,
    allowed: set[str] | frozenset[str],
    required: set[str] | frozenset[str] = frozenset(),
) -> None:
    """Unknown or missing keys are errors that list them and the valid keys (a typo never falls back silently)."""
    unknown = sorted(set(obj) - set(allowed))
    missing = sorted(set(required) - set(obj))
    problems = []
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}")
    if missing:
        problems.append(f"missing key(s) {', '.join(missing)}")
    if problems:
        raise schema.error(
            where,
            f"{'; '.join(problems)}. Valid keys: {', '.join(sorted(allowed))} "
            f"(see {schema.directory / 'default.json'} for a complete example)",
        )


def check_values(schema: ProfileSchema, obj: dict, where: str) -> None:
    """Each number-typed key holds a number of the right kind and range; a boolean is rejected by name."""
    types = schema.field_types
    for key in sorted(set(obj) & set(types)):
        value, kind = obj[key], types[key]
        if isinstance(value, bool) and kind in ("float", "int"):
            raise schema.error(
                where,
                f"{key!r} must be a number, got the boolean {str(value).lower()} "
                f"(write 1.0 / 0.0 or the intended value)",
            )
        if kind == "float":
            if key in schema.positive:
                if not _is_number(value) or value <= 0:
                    raise schema.error(where, f"{key!r} must be a positive number, got {value!r}")
            elif not _is_number(value) or not 0.0 <= float(value) <= 1.0:
                raise schema.error(where, f"{key!r} must be a probability in [0, 1], got {value!r}")
        elif kind == "int":
            low = schema.int_minimums.get(key, schema.int_minimum)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                what = "a positive integer" if low == 1 else f"an integer >= {low}"
                raise schema.error(where, f"{key!r} must be {what}, got {value!r}")
    if "thought_sources" in obj and (
        not isinstance(obj["thought_sources"], (list, tuple))
        or not all(isinstance(x, str) for x in obj["thought_sources"])
    ):
        raise schema.error(
            where,
            f"'thought_sources' must be a list of trajectory source names (files in "
            f"<data>/trajectories without .jsonl.gz), got {obj['thought_sources']!r}",
        )
    if schema.extra is not None:
        schema.extra(obj, where)


def profile_from_dict(schema: ProfileSchema, obj: Any, where: str = "<dict>") -> Any:
    """Validate and build a profile: every key known, every required key present, values of the right type and
    range, per-benchmark overrides likewise."""
    if not isinstance(obj, dict):
        raise schema.error(where, f"expected a JSON object, got {type(obj).__name__}")
    obj = dict(obj)
    obj.setdefault("name", Path(where).stem)
    obj.setdefault("description", "")
    allowed = set(schema.field_types)
    check_keys(schema, obj, where, allowed, schema.required)
    check_values(schema, obj, where)
    overrides = obj.get("benchmarks") or {}
    if not isinstance(overrides, dict):
        raise schema.error(where, "'benchmarks' must map benchmark names to objects of overrides")
    if "thought_sources" in obj:
        obj["thought_sources"] = tuple(obj["thought_sources"])
    for bench, over in overrides.items():
        if not isinstance(over, dict):
            raise schema.error(where, f"benchmarks.{bench} must be an object of overrides")
        check_keys(schema, over, f"{where} (benchmarks.{bench})", allowed - _NOT_OVERRIDABLE)
        check_values(schema, over, f"{where} (benchmarks.{bench})")
    return schema.cls(**obj)


def shipped(schema: ProfileSchema) -> list[str]:
    """The names of the shipped profiles."""
    return sorted(p.stem for p in schema.directory.glob("*.json"))


def load(schema: ProfileSchema, arg: str) -> Any:
    """``arg``: a shipped profile name (``default``) or a path to a JSON file."""
    arg = arg.strip() or "default"
    path = Path(arg).expanduser()
    if arg.endswith(".json") or path.is_file():
        if not path.is_file():
            raise SteerEnvsError(f"{schema.kind} file {str(path)!r} does not exist")
        where = str(path)
    else:
        path = schema.directory / f"{arg}.json"
        if not path.is_file():
            raise unknown_name(schema.kind, arg, shipped(schema), hint=schema.hint)
        where = path.name
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SteerEnvsError(f"{schema.kind} {where} is not valid JSON: {exc}") from None
    return profile_from_dict(schema, obj, where)


__all__ = ["ProfileSchema", "check_keys", "check_values", "load", "profile_from_dict", "shipped"]
