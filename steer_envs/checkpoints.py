"""Checkpoints that hold tensors and plain data only, so opening one never runs code.

Why: ``torch.load(..., weights_only=False)`` unpickles, and a pickle can call any function it names; a run
folder someone shared would run whatever its checkpoint asks for. Here a checkpoint is written with
``torch.save`` of a list of tensors and one JSON document (as bytes) holding everything else, and read back with
``torch.load(..., weights_only=True)``, which refuses anything but tensors and plain containers. Richer values
(tuples, sets, numpy arrays and scalars, numpy / ``random`` generators, dataclasses such as a trainer's state bank
or an env snapshot) are encoded into that document by :func:`to_plain` and rebuilt by :func:`from_plain` from an
allowlist: a dataclass is rebuilt only when its class lives in this project's packages (or was passed to
:func:`register_checkpoint_type`), field by field, without calling its ``__init__``.

A legacy checkpoint (a full pickle written before this format) is refused with a message saying how to
convert it once, if its origin is trusted::

    python -m steer_envs.checkpoints convert PATH --trust-this-file
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import atomic_write_bytes
from .errors import SteerEnvsError

FORMAT_KEY = "__steer_envs_checkpoint__"
FORMAT_VERSION = 1
TAG = "__t__"
#: packages whose dataclasses (and plain classes) a checkpoint may name
TRUSTED_PACKAGES: tuple[str, ...] = ("steer_envs", "agents", "baselines", "benchmarks")
_EXTRA_TYPES: dict[str, type] = {}
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


class CheckpointError(SteerEnvsError):
    """A checkpoint could not be written (a value that is not plain data) or was refused on reading."""


def register_checkpoint_type(cls: type) -> type:
    """Allow a dataclass from outside this project in checkpoints (e.g. a plugin executor's state)."""
    _EXTRA_TYPES[_qualified(cls)] = cls
    return cls


def _qualified(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _trusted(module: str) -> bool:
    return module.split(".")[0] in TRUSTED_PACKAGES


# -- encoding ------------------------------------------------------------------------------------------------
class _Encoder:
    """Turns a value into JSON-able plain data; tensors are collected aside and referenced by index."""

    def __init__(self) -> None:
        self.tensors: list[Any] = []

    def tensor(self, value) -> dict[str, Any]:
        self.tensors.append(value.detach().cpu())
        return {TAG: "tensor", "i": len(self.tensors) - 1}

    def encode(self, obj: Any) -> Any:
        import torch

        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and not isinstance(obj, enum.Enum):
            return int(obj)
        if isinstance(obj, float):
            return float(obj)
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj)
        if isinstance(obj, list):
            return [self.encode(x) for x in obj]
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return {TAG: "tuple", "items": [self.encode(x) for x in obj]}
        if isinstance(obj, (set, frozenset)):
            items = sorted(obj, key=repr)  # a stable order: the same state writes the same bytes
            return {TAG: type(obj).__name__, "items": [self.encode(x) for x in items]}
        if isinstance(obj, dict):
            if all(isinstance(k, str) for k in obj) and TAG not in obj:
                return {k: self.encode(v) for k, v in obj.items()}
            return {TAG: "dict", "items": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if isinstance(obj, bytes):
            return {TAG: "bytes", "data": self.tensor(torch.frombuffer(bytearray(obj), dtype=torch.uint8))}
        if isinstance(obj, np.ndarray):
            return self._array(obj)
        if isinstance(obj, np.generic) and obj.dtype.kind in "biufUS":
            return {TAG: "np_scalar", "dtype": obj.dtype.str, "value": obj.item()}
        if isinstance(obj, np.random.Generator):
            name = type(obj.bit_generator).__name__
            return {TAG: "np_generator", "bit_generator": name, "state": self.encode(obj.bit_generator.state)}
        if isinstance(obj, np.random.RandomState):
            return {TAG: "np_random_state", "state": self.encode(obj.get_state(legacy=False))}
        if isinstance(obj, random.Random):
            return {TAG: "random", "state": self.encode(obj.getstate())}
        if isinstance(obj, torch.Generator):
            return {TAG: "torch_generator", "state": self.tensor(obj.get_state())}
        cls = type(obj)
        allowed = _trusted(cls.__module__) or _qualified(cls) in _EXTRA_TYPES
        if isinstance(obj, enum.Enum) and allowed:
            return {TAG: "enum", "cls": _qualified(cls), "value": self.encode(obj.value)}
        if isinstance(obj, torch.nn.Module):
            raise CheckpointError(f"a checkpoint stores a module's state_dict(), not the {cls.__name__} module itself")
        if allowed and (dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__")):
            fields = {k: self.encode(v) for k, v in _fields_of(obj).items()}
            return {TAG: "object", "cls": _qualified(cls), "fields": fields}
        raise CheckpointError(
            f"cannot store a {cls.__module__}.{cls.__qualname__} in a checkpoint: checkpoints hold tensors, numbers, "
            "strings, containers, numpy arrays / generators and dataclasses of steer_envs, agents, baselines or "
            "benchmarks (register others with steer_envs.checkpoints.register_checkpoint_type)"
        )

    def _array(self, arr: np.ndarray) -> dict[str, Any]:
        import torch

        if arr.dtype.kind in "biuf":
            native = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
            try:
                return {TAG: "ndarray", "dtype": arr.dtype.str, "data": self.tensor(torch.from_numpy(native.copy()))}
            except (TypeError, ValueError):  # a dtype torch has no twin for: stored as a list below
                pass
        if arr.dtype.kind in "biufUS":
            return {TAG: "ndarray", "dtype": arr.dtype.str, "shape": list(arr.shape), "list": arr.ravel().tolist()}
        raise CheckpointError(
            f"cannot store a numpy array of dtype {arr.dtype} in a checkpoint (object arrays run code when loaded)"
        )


def _fields_of(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "__dict__"):
        return dict(vars(obj))
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def to_plain(obj: Any) -> tuple[Any, list[Any]]:
    """``obj`` as (JSON-able plain data, the tensors it references); raises :class:`CheckpointError`."""
    encoder = _Encoder()
    return encoder.encode(obj), encoder.tensors


# -- decoding ------------------------------------------------------------------------------------------------
class _Decoder:
    """Rebuilds what :class:`_Encoder` wrote; classes outside the allowlist are refused."""

    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = tensors

    def decode(self, obj: Any) -> Any:
        if isinstance(obj, list):
            return [self.decode(x) for x in obj]
        if not isinstance(obj, dict):
            return obj
        tag = obj.get(TAG)
        if tag is None:
            return {k: self.decode(v) for k, v in obj.items()}
        method = getattr(self, f"_{tag}", None) if isinstance(tag, str) and tag.isidentifier() else None
        if method is None:
            raise CheckpointError(f"unknown value tag {tag!r} in the checkpoint (written by a newer steer-envs?)")
        return method(obj)

    def _tensor(self, obj: dict):
        index = obj.get("i")
        if not isinstance(index, int) or not 0 <= index < len(self.tensors):
            raise CheckpointError(f"the checkpoint refers to tensor {index!r}, which it does not hold")
        return self.tensors[index]

    def _tuple(self, obj: dict) -> tuple:
        return tuple(self.decode(x) for x in obj["items"])

    def _set(self, obj: dict) -> set:
        return {self.decode(x) for x in obj["items"]}

    def _frozenset(self, obj: dict) -> frozenset:
        return frozenset(self.decode(x) for x in obj["items"])

    def _dict(self, obj: dict) -> dict:
        return {self.decode(k): self.decode(v) for k, v in obj["items"]}

    def _bytes(self, obj: dict) -> bytes:
        return bytes(self.decode(obj["data"]).numpy().tobytes())

    def _ndarray(self, obj: dict) -> np.ndarray:
        dtype = np.dtype(str(obj["dtype"]))
        if dtype.kind not in "biufUS":
            raise CheckpointError(f"numpy arrays of dtype {dtype} are refused in checkpoints")
        if "data" in obj:
            return self.decode(obj["data"]).numpy().astype(dtype, copy=True)
        return np.array(obj["list"], dtype=dtype).reshape(obj["shape"])

    def _np_scalar(self, obj: dict):
        dtype = np.dtype(str(obj["dtype"]))
        if dtype.kind not in "biufUS":
            raise CheckpointError(f"numpy scalars of dtype {dtype} are refused in checkpoints")
        return dtype.type(obj["value"])

    def _np_generator(self, obj: dict) -> np.random.Generator:
        name = obj.get("bit_generator")
        if name not in _BIT_GENERATORS:
            raise CheckpointError(f"unknown numpy bit generator {name!r} in the checkpoint")
        bit_generator = getattr(np.random, name)()
        bit_generator.state = self.decode(obj["state"])
        return np.random.Generator(bit_generator)

    def _np_random_state(self, obj: dict) -> np.random.RandomState:
        rs = np.random.RandomState()
        rs.set_state(self.decode(obj["state"]))
        return rs

    def _random(self, obj: dict) -> random.Random:
        rng = random.Random()
        rng.setstate(self.decode(obj["state"]))
        return rng

    def _torch_generator(self, obj: dict):
        import torch

        generator = torch.Generator()
        generator.set_state(self.decode(obj["state"]))
        return generator

    def _enum(self, obj: dict) -> enum.Enum:
        cls = _class(obj.get("cls"))
        if not issubclass(cls, enum.Enum):
            raise CheckpointError(f"{obj.get('cls')!r} is not an enum; refused")
        return cls(self.decode(obj["value"]))

    def _object(self, obj: dict) -> Any:
        cls = _class(obj.get("cls"))
        fields = obj.get("fields")
        if not isinstance(fields, dict):
            raise CheckpointError(f"malformed fields of {obj.get('cls')!r} in the checkpoint")
        instance: Any = object.__new__(cls)
        for key, value in fields.items():
            object.__setattr__(instance, key, self.decode(value))  # no __init__, no __setattr__ hooks: data only
        return instance


def from_plain(tree: Any, tensors: list[Any] | None = None) -> Any:
    """Rebuild what :func:`to_plain` encoded."""
    return _Decoder(list(tensors or [])).decode(tree)


def _class(name: Any) -> type:
    if not isinstance(name, str) or ":" not in name:
        raise CheckpointError(f"malformed class name {name!r} in the checkpoint")
    if name in _EXTRA_TYPES:
        return _EXTRA_TYPES[name]
    module, _, qualname = name.partition(":")
    if not _trusted(module):
        raise CheckpointError(
            f"the checkpoint names class {name!r}, which is outside steer_envs / agents / baselines / benchmarks and "
            "was not registered with register_checkpoint_type; refused"
        )
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise CheckpointError(
            f"the checkpoint names class {name!r}, which this version does not have ({exc})"
        ) from None
    if not isinstance(target, type):
        raise CheckpointError(f"the checkpoint names {name!r}, which is not a class; refused")
    return target


# -- files ---------------------------------------------------------------------------------------------------
def save_checkpoint(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` atomically to ``path``: its tensors, and everything else as one JSON document."""
    import torch

    tree, tensors = to_plain(obj)
    blob = bytearray(json.dumps(tree, separators=(",", ":")).encode("utf-8"))  # never empty: "null" at least
    payload = {FORMAT_KEY: FORMAT_VERSION, "tensors": tensors, "tree": torch.frombuffer(blob, dtype=torch.uint8)}
    atomic_write_bytes(Path(path), lambda fh: torch.save(payload, fh))


def load_checkpoint(path: str | os.PathLike) -> Any:
    """Read a checkpoint written by :func:`save_checkpoint`, running no code from the file."""
    import pickle

    import torch

    path = Path(path)
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {str(path)!r}") from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, AttributeError, TypeError) as exc:
        reason = str(exc).strip().splitlines()
        detail = next(
            (line.strip() for line in reason if "GLOBAL" in line or "Unsupported" in line),
            reason[0] if reason else type(exc).__name__,
        )
        raise CheckpointError(
            f"refused to open {str(path)!r}: it is not a tensors-and-plain-data checkpoint ({detail}). Opening it "
            "could run code stored in the file. If it is a checkpoint written by an earlier steer-envs and you trust "
            f"where it came from, convert it once: python -m steer_envs.checkpoints convert {path} --trust-this-file"
        ) from None
    if not isinstance(raw, dict) or raw.get(FORMAT_KEY) != FORMAT_VERSION:
        raise CheckpointError(
            f"{str(path)!r} is a torch file but not a steer-envs checkpoint (format {FORMAT_VERSION}); if it was "
            f"written by an earlier steer-envs, convert it: python -m steer_envs.checkpoints convert {path} "
            "--trust-this-file"
        )
    try:
        tree = json.loads(raw["tree"].numpy().tobytes().decode("utf-8"))
    except (KeyError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"{str(path)!r} is a damaged steer-envs checkpoint ({exc})") from None
    return from_plain(tree, raw.get("tensors"))


def convert_legacy(path: str | os.PathLike) -> None:
    """Re-save a legacy full-pickle checkpoint in the safe format. Unpickling RUNS CODE: trusted files only."""
    import torch

    obj = torch.load(Path(path), map_location="cpu", weights_only=False)
    if isinstance(obj, dict) and obj.get(FORMAT_KEY) == FORMAT_VERSION:
        return
    save_checkpoint(obj, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m steer_envs.checkpoints", description="convert a legacy (pickle) checkpoint to the safe format"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser("convert", help="unpickle a TRUSTED legacy checkpoint once and re-save it safely")
    convert.add_argument("paths", nargs="+")
    convert.add_argument(
        "--trust-this-file", action="store_true", help="required: unpickling runs any code the file holds"
    )
    args = parser.parse_args(argv)
    if not args.trust_this_file:
        print(
            "refusing: converting unpickles the file, which runs any code it holds; pass --trust-this-file if "
            "you know where it came from",
            file=sys.stderr,
        )
        return 2
    for path in args.paths:
        convert_legacy(path)
        print(f"converted {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
