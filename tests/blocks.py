"""Run a documentation page's code block the way a reader does: saved as a file, run with ``python FILE`` in a fresh
process (``python -c`` or ``exec`` would hide what only a script meets, such as the ``if __name__ == "__main__":``
guard that spawned worker processes need)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from steer_envs.paths import resolve_data_dir


def block_after(text: str, heading: str, lang: str = "python", index: int = 0) -> str:
    """The ``index``-th fenced ``lang`` block after ``heading`` (within that section)."""
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{lang}\n(.*?)```", section, re.S)[index]


def script_env(**extra: str) -> dict[str, str]:
    """The environment a block runs in: this one, with the data folder named (the block may run in a tmp folder)."""
    return {**os.environ, "STEER_ENVS_DATA": str(resolve_data_dir()), **extra}


def run_script(code: str, cwd: Path, name: str = "block.py", timeout: float = 600, **env: str):
    """Write ``code`` to ``cwd/name`` and run ``python name`` there; fails the test with the output's tail unless it
    exits 0. Returns the completed process (``stdout``, ``stderr``)."""
    path = Path(cwd) / name
    path.write_text(code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, name], cwd=cwd, env=script_env(**env), capture_output=True, text=True, timeout=timeout
    )
    assert run.returncode == 0, f"python {name} exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    return run
