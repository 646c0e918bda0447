"""Atomic writes: a file is the old version or the complete new one, whatever interrupts the writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from steer_envs.atomic import KILL_DURING_WRITE_ENV, atomic_write_bytes, atomic_write_json

ROOT = Path(__file__).resolve().parent.parent


def test_ctrl_c_during_a_write_is_delivered_after_the_file_is_complete(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def write(fh):
        fh.write(b"new-" * 1000)
        os.kill(os.getpid(), signal.SIGINT)  # arrives in the middle of the write
        fh.write(b"end")

    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(target, write)
    assert target.read_bytes() == b"new-" * 1000 + b"end"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "f.json"
    atomic_write_json(target, {"v": 1})

    def write(fh):
        fh.write(b"{")
        raise RuntimeError("serializer failed")

    with pytest.raises(RuntimeError):
        atomic_write_bytes(target, write)
    assert target.read_text() == '{\n  "v": 1\n}\n' and len(list(tmp_path.iterdir())) == 1


def test_sigkill_in_the_middle_of_a_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "f.json"
    atomic_write_json(target, {"v": 1})
    code = (
        f"from steer_envs.atomic import atomic_write_json; atomic_write_json({str(target)!r}, "
        "{'v': 2, 'pad': 'x' * 100000})"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, KILL_DURING_WRITE_ENV: "1", "PYTHONPATH": str(ROOT)}
    )
    assert proc.returncode == -signal.SIGKILL
    assert target.read_text() == '{\n  "v": 1\n}\n'  # the half-written new version never replaced it
