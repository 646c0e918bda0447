"""The compact summary of a headroom ladder: what a page and the README quote, committed without the run folder.

``python -m benchmarks.harness.ladder_summary RUN_DIR DEST --command "steer-envs headroom ..."`` copies the ladder's
``ladder.json`` (rows, intervals, dev choices, the code behind them), ``choices.json`` and ``ladder.md`` into ``DEST``,
writes ``run.json`` (the command that made the run, its test episodes, the machine) and ``episodes.jsonl.gz``: every
test episode of every rung (task, benchmark, seed, F1, interventions, turns, failed), from which
:func:`rows_from_summary` recomputes each rung's paired interval, so a reader (and a test) can check every quoted
figure against its evidence.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from steer_envs.atomic import atomic_write_bytes, atomic_write_text
from steer_envs.episodes import EpisodeLog, EpisodeRecord

from .ladder import rung_episodes
from .results_summary import EPISODE_FIELDS, EPISODES_FILE, gzip_lines, machine, read_episodes
from .stats import HierarchicalBootstrap, RowRuns
from .summary_rows import stored_record

#: what a ladder's run folder holds that the summary keeps as it is
KEPT = ("ladder.json", "choices.json", "ladder.md")


def write_summary(run_dir: str | Path, dest: str | Path, command: str) -> Path:
    """Copy :data:`KEPT`, write ``run.json`` and the test episodes of every rung the ladder reports; return
    ``dest``. ``command``: the ``steer-envs headroom`` command that made ``run_dir`` (its paths as the reader should
    type them)."""
    run, out = Path(run_dir), Path(dest)
    ladder = json.loads((run / "ladder.json").read_text(encoding="utf-8"))
    out.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        shutil.copyfile(run / name, out / name)
    lines = []
    for row in ladder["rows"]:
        for r in EpisodeLog(rung_episodes(run, row["rung"])).records:
            lines.append({"rung": row["rung"], **{k: getattr(r, k) for k in EPISODE_FIELDS}})
    atomic_write_bytes(out / EPISODES_FILE, gzip_lines(lines))
    run_record = {"command": command, "test_episodes": len(lines) // max(1, len(ladder["rows"])), "machine": machine()}
    atomic_write_text(out / "run.json", json.dumps(run_record, indent=1) + "\n")
    return out


def rows_from_summary(dest: str | Path) -> dict[str, dict[str, Any]]:
    """Each rung's gain over no supervision (and over the best fixed rule) recomputed from the summary's episodes
    with the harness's paired bootstrap, as the ladder computes them."""
    folder = Path(dest)
    ladder = json.loads((folder / "ladder.json").read_text(encoding="utf-8"))
    by_rung: dict[str, list[EpisodeRecord]] = {row["rung"]: [] for row in ladder["rows"]}
    for line in read_episodes(folder / EPISODES_FILE):
        by_rung[line["rung"]].append(stored_record(line, method=line["rung"]))
    boot = HierarchicalBootstrap(
        [RowRuns(name, {name: recs}) for name, recs in by_rung.items()], ladder["config"]["benchmarks"]
    )
    rows: dict[str, dict[str, Any]] = {}
    for name in by_rung:
        rows[name] = {}
        if name != "none":
            rows[name]["gain"] = asdict(boot.gain(name, "none")[1])
        if "best_fixed_rule" in by_rung and name not in ("none", "best_fixed_rule"):
            rows[name]["vs_best_fixed_rule"] = asdict(boot.gain(name, "best_fixed_rule")[1])
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.harness.ladder_summary", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run_dir", help="the ladder's run folder (steer-envs headroom --out)")
    parser.add_argument("dest", help="the summary folder, e.g. docs/results/testbed/default")
    parser.add_argument("--command", required=True, help="the steer-envs headroom command that made RUN_DIR")
    args = parser.parse_args(argv)
    print(f"wrote {write_summary(args.run_dir, args.dest, args.command)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
