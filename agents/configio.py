"""Typed run configs read from JSON or TOML, with unknown keys as errors and a fingerprint for run folders.

A trainer's run folder stores its config's fingerprint; resuming with a different config is refused, so a folder
never mixes two experiments (:mod:`agents.trainer_base`). Used by the steering and the ACTGUIDE-RL configs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, TypeVar

from steer_envs.errors import SteerEnvsError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 has no tomllib; tomli is the same parser as a separate package (a dependency there)
    import tomli as tomllib

C = TypeVar("C")


#: the fields a fingerprint leaves out: they change what is recorded about a run (the experiment trackers), not the
#: run, so a run folder resumes whether they are set or not
UNHASHED_FIELDS = ("log_with",)


def config_fingerprint(data: dict[str, Any]) -> str:
    """The fingerprint of a config's dict (its ``to_dict()``): a hash of every field as it is, except
    :data:`UNHASHED_FIELDS`, so two configs that would train differently never share one."""
    hashed = {name: value for name, value in data.items() if name not in UNHASHED_FIELDS}
    return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


def config_keys(cls: type) -> set[str]:
    """The keys a config file of ``cls`` may hold: its fields (those of an extended env protocol included)."""
    return {f.name for f in fields(cls)}


def config_from_dict(cls: type[C], data: dict[str, Any], where: str = "config", what: str = "config") -> C:
    """``cls(**data)`` with errors naming ``where`` (a file) and ``what`` ("steering config", ...)."""
    known = config_keys(cls)
    unknown = sorted(set(data) - known)
    if unknown:
        raise SteerEnvsError(f"{where}: unknown {what} keys {unknown}; valid keys: {sorted(known)}")
    try:
        return cls(**data)
    except TypeError as exc:
        raise SteerEnvsError(f"{where}: {exc}") from None


def load_config(cls: type[C], path: str | Path, what: str = "config") -> C:
    path = Path(path)
    if not path.is_file():
        raise SteerEnvsError(f"config file {str(path)!r} does not exist")
    text = path.read_text()
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            raise SteerEnvsError(f"config file {str(path)!r} must end in .json or .toml")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SteerEnvsError(f"config file {str(path)!r} is not valid {path.suffix[1:].upper()}: {exc}") from None
    return config_from_dict(cls, data, where=str(path), what=what)


def add_log_with_argument(parser: argparse.ArgumentParser) -> None:
    """``--log-with`` of the trainers' commands: the config's ``log_with`` (accelerate's experiment trackers)."""
    parser.add_argument(
        "--log-with",
        default=None,
        metavar="TRACKERS",
        help="also log every round's/iteration's numbers to accelerate's experiment trackers, "
        "comma-separated (tensorboard, wandb, trackio, aim, mlflow, comet_ml, ... or all; "
        "'none' = off); files under OUT/trackers/. Replaces the config's log_with; never "
        "part of the run's fingerprint, so a run resumes with it on or off",
    )


def with_log_with(config: C, args: argparse.Namespace) -> C:
    """``config`` with ``--log-with`` applied when it was given (rebuilt, so the tracker names are checked)."""
    value = getattr(args, "log_with", None)
    return config if value is None else replace(config, log_with=value)  # type: ignore[type-var]
