"""Typed method options: every method declares its options as a frozen dataclass of :class:`MethodOptions`, one
field per option, made with :func:`method_option` (default, doc, and where it has one a range, a choice list or the
deployment-only flag).

This module is the one home for turning the text of a method spec (``steering_rl:lr=3e-4,m=8``) into that
dataclass: :meth:`MethodOptions.parse` checks the names (a misspelled one gets a did-you-mean suggestion and the
valid names), converts each value to its field's type (``int``, ``float``, ``bool``, ``str``, a ``Literal`` of
choices, any of them ``| None`` where an empty value means "none"), and :meth:`MethodOptions.__post_init__` checks
ranges and choices, so a method's options are validated once, when the method is built, and the method's code reads
typed attributes. It imports nothing of ``baselines`` and no torch.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar, Union

from steer_envs.errors import SteerEnvsError

T = TypeVar("T", bound="MethodOptions")

#: the texts a ``bool`` option accepts (case-insensitive)
TRUE_TEXTS = ("1", "true", "yes", "on")
FALSE_TEXTS = ("0", "false", "no", "off")


class MethodOptionError(SteerEnvsError, ValueError):
    """A method spec's option is unknown, of the wrong type or out of range (the message says which and why)."""


def method_option(
    default: Any,
    doc: str,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    deploy: bool = False,
) -> Any:
    """A dataclass field that is a method option. ``doc`` is shown by ``steer-envs eval --help`` and
    ``--list-methods``; ``ge`` / ``gt`` / ``le`` / ``lt`` bound a number; ``deploy=True`` marks an option that only
    changes deployment (a gate threshold), not what is trained: specs that differ only in such options share one
    checkpoint (a τ sweep trains once)."""
    bounds = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt)) if v is not None}
    return field(default=default, metadata={"doc": doc, "bounds": bounds, "deploy": deploy})


def _members(kind: Any) -> tuple[Any, ...]:
    """The alternatives of a union annotation (``float | None``, ``Union[...]``), else ``(kind,)``."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is Union:
        return typing.get_args(kind)
    return (kind,)


def type_name(kind: Any) -> str:
    """How an option's type reads in help and errors: ``int``, ``float or empty``, ``one of pass, policy``,
    ``float or dev``."""
    members = [m for m in _members(kind) if m is not type(None)]
    names = []
    for member in members:
        if typing.get_origin(member) is Literal:
            choices = ", ".join(map(str, typing.get_args(member)))
            names.append(f"one of {choices}" if len(members) == 1 else choices.replace(", ", " or "))
        else:
            names.append(getattr(member, "__name__", str(member)))
    return " or ".join(names) + (" or empty" if type(None) in _members(kind) else "")


def _convert(text: str, kind: Any) -> Any:
    """``text`` as a value of ``kind``; ValueError when it is none of the kind's alternatives."""
    members = _members(kind)
    if text == "" and type(None) in members:
        return None
    for member in members:  # a Literal before a number, so ``pass_bias=dev`` is the choice, not a float error
        if typing.get_origin(member) is Literal and text in map(str, typing.get_args(member)):
            return next(choice for choice in typing.get_args(member) if str(choice) == text)
    for member in members:
        if member is bool:
            if text.lower() in TRUE_TEXTS + FALSE_TEXTS:
                return text.lower() in TRUE_TEXTS
        elif member in (int, float, str):
            try:
                return member(text)
            except ValueError:
                continue
    raise ValueError(text)


def _fits(value: Any, kind: Any) -> bool:
    """Whether a (programmatically given) value is of the option's type: a bool is not an int, an int is a float."""
    for member in _members(kind):
        if member is type(None) and value is None:
            return True
        if typing.get_origin(member) is Literal and value in typing.get_args(member):
            return True
        if member is bool and isinstance(value, bool):
            return True
        if member is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if member is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if member is str and isinstance(value, str):
            return True
    return False


_BOUND_TEXT = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
_BOUND_OK = {"ge": lambda v, b: v >= b, "gt": lambda v, b: v > b, "le": lambda v, b: v <= b, "lt": lambda v, b: v < b}


def in_range(bounds: Mapping[str, float]) -> str:
    """``in [0, 1]``, ``in (0, 1)``, ``>= 1``: how a field's bounds read in help and errors."""
    low = next(((k, bounds[k]) for k in ("ge", "gt") if k in bounds), None)
    high = next(((k, bounds[k]) for k in ("le", "lt") if k in bounds), None)
    if low and high:
        return f"in {'[' if low[0] == 'ge' else '('}{low[1]:g}, {high[1]:g}{']' if high[0] == 'le' else ')'}"
    return " and ".join(f"{_BOUND_TEXT[bound[0]]} {bound[1]:g}" for bound in (low, high) if bound)


@dataclass(frozen=True)
class MethodOptions:
    """Base of every method's options (a method without options uses it as it is). Subclasses are frozen
    dataclasses whose fields are made with :func:`method_option`; :meth:`check` adds rules that tie fields together."""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            value, kind = getattr(self, f.name), hints[f.name]
            if not _fits(value, kind):
                raise MethodOptionError(f"option {f.name} expects {type_name(kind)}, got {value!r}")
            if float in _members(kind) and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, f.name, float(value))  # an int given to a float option: stored as one
                value = float(value)
            bounds = f.metadata.get("bounds", {})
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and not all(_BOUND_OK[k](value, b) for k, b in bounds.items())
            ):
                raise MethodOptionError(f"option {f.name} must be {in_range(bounds)}, got {value!r}")
        self.check()

    def check(self) -> None:
        """Rules between fields (``pass_prior`` needs ``slow_pass``); raise :class:`MethodOptionError`."""

    # -- what the method list, the help and the run folders read --------------------------------------------------
    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def option_docs(cls) -> dict[str, str]:
        """option -> its documentation (from the fields' metadata)."""
        return {f.name: f.metadata.get("doc", "") for f in fields(cls)}

    @classmethod
    def deploy_names(cls) -> frozenset[str]:
        """The deployment-only options (:func:`method_option`'s ``deploy``): left out of a spec's training label."""
        return frozenset(f.name for f in fields(cls) if f.metadata.get("deploy"))

    @classmethod
    def describe(cls) -> list[tuple[str, str, str, str]]:
        """One ``(name, type, default, doc)`` row per option, the doc with its range (for help texts)."""
        hints = typing.get_type_hints(cls)
        rows = []
        for f in fields(cls):
            bounds = f.metadata.get("bounds", {})
            doc = f.metadata.get("doc", "") + (f" ({in_range(bounds)})" if bounds else "")
            rows.append((f.name, type_name(hints[f.name]), format_value(f.default), doc))
        return rows

    def as_dict(self) -> dict[str, Any]:
        """Every option and its value (JSON types: what a run folder records for the method)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def redefault(cls, name: str, default: Any) -> Any:
        """``name``'s field of this class with another default and the same doc, range and flags (for a subclass
        whose method has another default, e.g. a smaller training budget)."""
        return field(default=default, metadata=cls.__dataclass_fields__[name].metadata)

    @classmethod
    def parse(cls: type[T], method: str, texts: Mapping[str, str]) -> T:
        """The options of ``method`` from a spec's ``key -> text``: names checked (did-you-mean and the valid names),
        each text converted to its field's type, ranges and :meth:`check` applied; every error names ``method``."""
        names = cls.option_names()
        unknown = [key for key in texts if key not in names]
        if unknown:
            key = unknown[0]
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            valid = ", ".join(f"{name} (default {default or 'empty'})" for name, _, default, _ in cls.describe())
            raise MethodOptionError(
                f"method {method!r} has no option {key!r}{hint}; its options: "
                f"{valid or 'none'} (`steer-envs eval --help` describes each)"
            )
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for key, text in texts.items():
            try:
                values[key] = _convert(text.strip(), hints[key])
            except ValueError:
                raise MethodOptionError(
                    f"method {method!r}: option {key} expects {type_name(hints[key])}, got {text!r}"
                ) from None
        try:
            return cls(**values)
        except MethodOptionError as exc:
            raise MethodOptionError(f"method {method!r}: {exc}") from None


def format_value(value: Any) -> str:
    """An option value as a spec would write it (``None`` as empty, a bool as 1 / 0)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


#: a method without options
NoOptions = MethodOptions
