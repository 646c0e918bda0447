"""Arguments shared by several subcommands: the data folder, and the env protocol's flags generated from its fields."""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import SteerEnvsError


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """``--data-dir``: the protocol's ``data_dir`` flag (generated like the others), its help naming what the folder
    holds; for commands that take only a few protocol flags, or none but this one."""
    add_protocol_arguments(
        parser,
        include=("data_dir",),
        overrides={
            "data_dir": {
                "help": "folder with tasks/, corpus/, trajectories/ (default: $STEER_ENVS_DATA, else ../shared/data)"
            }
        },
    )


def add_allow_origin(parser: argparse.ArgumentParser) -> None:
    """``--allow-origin``: the browser origins a server answers beside this machine's own pages; one flag for every
    server command, so their Origin policy reads the same everywhere."""
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also serve browser pages of this origin, e.g. http://host:3000 ('*': any); by default "
        "only this machine's pages (requests without an Origin header are always served)",
    )


# -- the env protocol's flags --------------------------------------------------------------------------------------
#: how a protocol field's annotation becomes ``add_argument`` keywords: the registry a new field type is added to
#: (``str`` takes argparse's own default type, so the flags read exactly as the hand-written ones did)
FLAG_TYPES: dict[type, dict[str, Any]] = {str: {}, int: {"type": int}, float: {"type": float}}


def protocol_flag(name: str) -> str:
    """The flag of a protocol field: ``max_turns`` → ``--max-turns``."""
    return "--" + name.replace("_", "-")


def _field_doc(name: str, protocol_field: dataclasses.Field) -> str:
    """The option's documentation, written once in :class:`~steer_envs.envs.base.EnvConfig`'s field metadata (a
    protocol field EnvConfig lacks may carry its own ``metadata={"doc": ...}``)."""
    from ..envs.base import EnvConfig

    env_field = next((f for f in dataclasses.fields(EnvConfig) if f.name == name), None)
    doc = env_field.metadata.get("doc") if env_field is not None else None
    return doc or protocol_field.metadata.get("doc", "")


def _flag_keywords(name: str, annotation: Any) -> dict[str, Any]:
    """``add_argument`` keywords from a field's type: ``X | None`` as ``X``; ``tuple[X, ...]`` as ``nargs="+"``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _flag_keywords(name, args[0])
    if typing.get_origin(annotation) is tuple:
        return {**_flag_keywords(name, args[0]), "nargs": "+"}
    if annotation not in FLAG_TYPES:
        raise TypeError(
            f"EnvProtocol.{name}: no CLI flag for type {annotation!r}; add it to steer_envs.cli.common.FLAG_TYPES"
        )
    return dict(FLAG_TYPES[annotation])


def _default_text(value: Any) -> str:
    text = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return text.replace("%", "%%")


def add_protocol_arguments(
    parser: argparse.ArgumentParser,
    *,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[str, ...]:
    """Add a flag for each field of :class:`~steer_envs.protocol.EnvProtocol` (``max_turns`` → ``--max-turns``).

    Why generated: the options every env of a run shares are written once (the protocol's fields, their docs in
    :class:`~steer_envs.envs.base.EnvConfig`); a command that copied them by hand drifted from them. The type comes
    from the field (``tuple[str, ...]``: ``nargs="+"``), the default from the field unless ``defaults`` names
    another (``{"split": "test"}``), the help from the docs. ``include`` (default: every field, so a new protocol
    field becomes a flag of every command that takes them all) and ``exclude`` choose the flags; ``overrides``
    gives a flag more ``add_argument`` keywords (``{"split": {"choices": SPLITS}}``). Returns the fields added,
    in field order; :func:`protocol_kwargs` reads them back."""
    from ..protocol import EnvProtocol

    by_name = {f.name: f for f in dataclasses.fields(EnvProtocol)}
    defaults, overrides = dict(defaults or {}), dict(overrides or {})
    for what, names in (
        ("include", include or ()),
        ("exclude", exclude),
        ("defaults", defaults),
        ("overrides", overrides),
    ):
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise SteerEnvsError(
                f"add_protocol_arguments {what}: {unknown} are no EnvProtocol fields; "
                f"the fields are {', '.join(by_name)}"
            )
    chosen = tuple(n for n in by_name if (include is None or n in include) and n not in exclude)
    hints = typing.get_type_hints(EnvProtocol)
    for name in chosen:
        default = defaults.get(name, by_name[name].default)
        doc = _field_doc(name, by_name[name]).replace("%", "%%")  # argparse %-formats help
        keywords: dict[str, Any] = {
            **_flag_keywords(name, hints[name]),
            "default": default,
            "help": doc if default is None or "(default" in doc else f"{doc} (default {_default_text(default)})",
        }
        keywords.update(overrides.get(name, {}))
        parser.add_argument(protocol_flag(name), **keywords)
    return chosen


def protocol_kwargs(
    args: argparse.Namespace, names: Sequence[str] | None = None, *, drop_none: bool = False
) -> dict[str, Any]:
    """The protocol fields a command parsed (those of ``names``, default every field ``args`` has), as
    :class:`~steer_envs.protocol.EnvProtocol` keywords: lists as tuples; ``drop_none`` leaves out the flags left
    at ``None`` ("keep the config's / the env's own value")."""
    from ..protocol import EnvProtocol

    chosen = tuple(f.name for f in dataclasses.fields(EnvProtocol)) if names is None else tuple(names)
    kwargs = {n: getattr(args, n) for n in chosen if hasattr(args, n)}
    kwargs = {n: tuple(v) if isinstance(v, list) else v for n, v in kwargs.items()}
    return {n: v for n, v in kwargs.items() if v is not None} if drop_none else kwargs


def protocol_from_args(args: argparse.Namespace, base: Any = None, names: Sequence[str] | None = None):
    """An :class:`~steer_envs.protocol.EnvProtocol` from parsed flags: ``base`` (default: the protocol's own
    defaults) with every flag the command took in place of its field; flags left at ``None`` keep ``base``'s."""
    from ..protocol import EnvProtocol

    return dataclasses.replace(
        base if base is not None else EnvProtocol(), **protocol_kwargs(args, names, drop_none=True)
    )
