"""A run folder: the config it was made for, one JSONL of episodes per method, metrics, tables, plots.

Layout::

    RUN_DIR/config.json            the protocol (EvalConfig) and its hash; written once
    RUN_DIR/methods.json           label -> the method's resolved options (e.g. a checkpoint fingerprint)
    RUN_DIR/episodes/<label>.jsonl one line per finished (task, seed) episode, appended as it finishes
    RUN_DIR/checkpoints/<label>/   trained policies (reused on resume), each with budget.json (env steps spent)
    RUN_DIR/training/<label>.jsonl training curves
    RUN_DIR/runs.jsonl             one line per evaluation call: label, split, commit (see :mod:`.provenance`)
    RUN_DIR/metrics.json, table.md, report.md, plots/*.png

Several folders may share one checkpoints folder (``checkpoints=``): a method trained once on the train split is
then evaluated on dev (to choose its operating point) and on test from the same weights.

A folder made for one protocol refuses another, with a message naming the differing fields: mixing episodes of
two protocols would silently break the pairing every interval relies on. A folder where nothing ran yet (a command
refused before its first episode) is no claim: the next command's protocol replaces it.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from pathlib import Path

from steer_envs.atomic import atomic_write_json
from steer_envs.errors import SteerEnvsError

from .config import EvalConfig


class ConfigMismatchError(SteerEnvsError):
    """The run folder was created for a different evaluation protocol."""


def label_filename(label: str) -> str:
    """A file-system-safe, collision-free name for a method label."""
    safe = re.sub(r"[^A-Za-z0-9._=-]+", "_", label).strip("_") or "method"
    return f"{safe[:80]}-{zlib.crc32(label.encode()):08x}"


def _write_json(path: Path, data, sort_keys: bool = True) -> None:
    atomic_write_json(path, data, sort_keys=sort_keys)  # a kill never leaves half a config


class RunFolder:
    """Open (or create) a run folder for ``config``; raise :class:`ConfigMismatchError` on a different one."""

    def __init__(
        self, root: str | os.PathLike, config: EvalConfig | None = None, checkpoints: str | os.PathLike | None = None
    ) -> None:
        self.root = Path(root)
        self.checkpoints_root = Path(checkpoints) if checkpoints is not None else self.root / "checkpoints"
        stored = self._read_config()
        if config is None:
            if stored is None:
                raise SteerEnvsError(
                    f"{str(self.root)!r} is not a run folder (no config.json); create one with "
                    f"`steer-envs eval --method ... --out {self.root}`"
                )
            self.config = stored
            return
        config = config if config.task_ids_sha else config.resolved()
        if stored is not None and stored.config_hash() != config.config_hash():
            if self.holds_results():
                raise ConfigMismatchError(self._mismatch_message(stored, config))
            stored = None  # a command refused before anything ran (a typo in --executor) claims nothing
            (self.root / "methods.json").unlink(missing_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        if stored is None:
            _write_json(self.config_path, config.to_json())
        self.config = config

    def holds_results(self) -> bool:
        """Whether anything ran for this folder: a file other than the config and the method list that is not
        empty (an episode, a training curve, a record of a run), here or in its checkpoints folder (shared with
        other folders, it may lie outside)."""
        kept = {self.config_path, self.root / "methods.json"}
        places = [self.root] + ([self.checkpoints_root] if self.checkpoints_root.exists() else [])
        return any(p.is_file() and p not in kept and p.stat().st_size > 0 for place in places for p in place.rglob("*"))

    # -- paths ------------------------------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    def episodes_path(self, label: str) -> Path:
        path = self.root / "episodes"
        path.mkdir(parents=True, exist_ok=True)
        return path / f"{label_filename(label)}.jsonl"

    def checkpoint_dir(self, label: str) -> Path:
        return self.checkpoints_root / label_filename(label)

    def training_log(self, label: str) -> Path:
        path = self.root / "training"
        path.mkdir(parents=True, exist_ok=True)
        return path / f"{label_filename(label)}.jsonl"

    @property
    def plots_dir(self) -> Path:
        path = self.root / "plots"
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- methods -----------------------------------------------------------------------------------------------
    def methods(self) -> dict[str, dict]:
        """label -> stored method info, in the order methods were added."""
        path = self.root / "methods.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def register_method(self, label: str, info: dict) -> None:
        """Record a method; refuse if the same label was run before with different options."""
        methods = self.methods()
        old = methods.get(label)
        if old is not None and old != info:
            changed = sorted(k for k in set(old) | set(info) if old.get(k) != info.get(k))
            raise ConfigMismatchError(
                f"method {label!r} in run folder {str(self.root)!r} was run with different options "
                f"({', '.join(f'{k}: {old.get(k)!r} -> {info.get(k)!r}' for k in changed)}); "
                f"use a new --out folder, or delete {self.episodes_path(label)} to redo it"
            )
        if old is None:
            methods[label] = info
            _write_json(self.root / "methods.json", methods, sort_keys=False)  # keeps the order of addition

    # -- internals --------------------------------------------------------------------------------------------
    def _read_config(self) -> EvalConfig | None:
        if not self.config_path.is_file():
            return None
        try:
            return EvalConfig.from_json(json.loads(self.config_path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError) as exc:
            raise SteerEnvsError(
                f"{self.config_path} is not a valid run config ({exc}); use a new --out folder"
            ) from None

    def _mismatch_message(self, stored: EvalConfig, wanted: EvalConfig) -> str:
        old, new = stored.protocol(), wanted.protocol()
        diffs = [f"{k}: folder has {old[k]!r}, this run asks for {new[k]!r}" for k in old if old[k] != new[k]]
        return (
            f"run folder {str(self.root)!r} was created for a different configuration "
            f"(hash {stored.config_hash()} vs {wanted.config_hash()}): {'; '.join(diffs)}. "
            "Results of different protocols are never mixed: pass a new --out folder, or repeat the options "
            f"the folder was made with (see {self.config_path})"
        )
