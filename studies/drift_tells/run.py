"""The hand-written rung on each level of the drift family: how far does a rule written from the card get?

On each of ``sim:drift1..3`` the study evaluates, on the test split with the ladders' tasks and evaluation seeds
(``--limit 150 --seeds 3``), three rows through the harness: no supervision, the ladder's best fixed rule (the
option and decision its ladder chose on dev, ``choices.json``; where a level has no committed ladder, the harness's
``best_fixed_rule`` chooses on 15 dev tasks per benchmark) and the card's rule (:mod:`.rule`, ``drift_tells``).
Every interval is the harness's paired bootstrap over the same (task, seed) pairs; every verdict is
:func:`benchmarks.harness.verdicts.verdict` of its interval.

Where the rule stands on the ladder: the committed ladder of each level (``docs/results/drift/<level>/ladder.json``)
gives the learnable ceiling's gain over the best fixed rule; the card's rule's gain over the same fixed rule, divided
by it, is the card's rule's place between the fixed rule (0) and the ceiling (1). The study's no-supervision and
fixed-rule rows replay the ladder's (same tasks, seeds and choice: their F1 are recorded beside the ladder's), but the
ceiling's episodes are not committed, so the place is a point estimate; the rows this study runs are paired.

Usage (from the repository root)::

    python -m studies.drift_tells.run --out runs/drift_tells

It resumes (each level's run folder), writes ``docs/results/drift/hand_written/summary.json`` (rows, intervals,
the ladders' figures, the code record) and ``episodes.jsonl.gz`` (every test episode), and prints the table.
``--quick`` runs a tiny version (a few tasks, one seed) for the tests.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.config import EvalConfig
from benchmarks.harness.provenance import code_record, portable_command
from benchmarks.harness.results_summary import EPISODE_FIELDS, EPISODES_FILE, gzip_lines, machine, now
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate
from benchmarks.harness.stats import RowRuns
from steer_envs.atomic import atomic_write_bytes, atomic_write_text
from steer_envs.episodes import EpisodeLog, EpisodeRecord
from steer_envs.paths import REPO_ROOT
from studies.rows import paired_rows

from .rule import NAME, register

#: the drift page's data folder (``steer-envs report results_drift`` reads it)
RESULTS = REPO_ROOT / "docs" / "results" / "drift" / "hand_written"
SUMMARY = "summary.json"
LEVELS = ("sim:drift1", "sim:drift2", "sim:drift3")
#: the rows every level reports
ROWS = ("none", "best_fixed_rule", "hand_written")
#: the best fixed rule of a level without a committed ladder: chosen on dev as the ladders choose it
CHOOSE_RULE = "best_fixed_rule:dev_tasks=15"
#: the paired differences each level reports: (row, reference)
GAINS = (("best_fixed_rule", "none"), ("hand_written", "none"), ("hand_written", "best_fixed_rule"))


def ladder_of(level: str) -> dict[str, Any] | None:
    """The committed ladder of a level (None when there is none)."""
    path = REPO_ROOT / "docs" / "results" / "drift" / level.split(":", 1)[1] / "ladder.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def ceiling_over_rule(ladder: dict[str, Any] | None) -> float | None:
    """The ladder's learnable ceiling minus its best fixed rule (F1 points), from its rows' means."""
    if ladder is None:
        return None
    f1 = {row["rung"]: row["f1"] for row in ladder["rows"]}
    if "learnable_ceiling" not in f1 or "best_fixed_rule" not in f1:
        return None
    return round(f1["learnable_ceiling"] - f1["best_fixed_rule"], 3)


def specs_for(ladder: dict[str, Any] | None) -> dict[str, str]:
    """Row -> the method spec the harness evaluates: the ladder's dev-chosen fixed rule where there is a ladder."""
    chosen = (ladder or {}).get("choices", {}).get("best_fixed_rule")
    rule = f"fixed_rule:option={chosen['option']},at={chosen['at']}" if chosen else CHOOSE_RULE
    return {"none": "no_supervision", "best_fixed_rule": rule, "hand_written": NAME}


def records_of(folder: RunFolder, specs: dict[str, str]) -> dict[str, list[EpisodeRecord]]:
    return {row: list(EpisodeLog(folder.episodes_path(spec_label(spec))).records) for row, spec in specs.items()}


def spec_label(spec: str) -> str:
    from baselines.registry import parse_method

    return parse_method(spec).label


def measure(records: dict[str, list[EpisodeRecord]], benchmarks: Sequence[str]) -> dict[str, Any]:
    """Each row's F1, rate and turns, and the :data:`GAINS` with their intervals and verdicts."""
    return paired_rows({row: RowRuns(row, {row: recs}) for row, recs in records.items()}, benchmarks, GAINS)


def run_level(level: str, out: Path, limit: int, seeds: int, progress: bool) -> dict[str, Any]:
    register()
    folder = RunFolder(out / level.split(":", 1)[1], EvalConfig(executor=level, split="test", seeds=seeds, limit=limit))
    ladder = ladder_of(level)
    specs = specs_for(ladder)
    for spec in specs.values():
        evaluate(folder, spec, progress=progress, log=lambda line: print(line, file=sys.stderr))
    records = records_of(folder, specs)
    result = measure(records, folder.config.benchmarks)
    result["specs"] = specs
    ceiling = ceiling_over_rule(ladder)
    f1 = {row["rung"]: row["f1"] for row in ladder["rows"]} if ladder else {}
    over_rule = result["gains"]["hand_written - best_fixed_rule"]["mean"]
    result["ladder"] = {
        "source": f"docs/results/drift/{level.split(':', 1)[1]}/ladder.json" if ladder else None,
        "ceiling_over_rule": ceiling,
        "none_f1": f1.get("none"),
        "best_fixed_rule_f1": f1.get("best_fixed_rule"),
    }
    result["place"] = round(over_rule / ceiling, 3) if ceiling else None
    result["config"] = folder.config.to_json()
    result["episodes"] = [
        {"level": level, "row": row, **{k: getattr(r, k) for k in EPISODE_FIELDS}}
        for row, recs in records.items()
        for r in recs
    ]
    return result


def table(levels: dict[str, dict[str, Any]]) -> str:
    """The summary as markdown: one line per level."""
    lines = [
        "| level | none F1 | best fixed rule − none | hand-written − none | hand-written − best fixed rule | "
        "notes / task (rule, hand-written) | ceiling − rule (ladder) | place |",
        "| --- | ---: | --- | --- | --- | --- | ---: | ---: |",
    ]

    def cell(g: dict[str, Any]) -> str:
        return f"{g['mean']:+.2f} [{g['low']:+.2f}, {g['high']:+.2f}] {g['verdict']}"

    for level, result in levels.items():
        rows, gains = result["rows"], result["gains"]
        ceiling, place = result["ladder"]["ceiling_over_rule"], result["place"]
        lines.append(
            f"| `{level}` | {rows['none']['f1']:.2f} | {cell(gains['best_fixed_rule - none'])} | "
            f"{cell(gains['hand_written - none'])} | {cell(gains['hand_written - best_fixed_rule'])} | "
            f"{rows['best_fixed_rule']['interventions_per_task']:.2f}, "
            f"{rows['hand_written']['interventions_per_task']:.2f} | "
            f"{'—' if ceiling is None else f'{ceiling:+.2f}'} | "
            f"{'—' if place is None else f'{place:.2f}'} |"
        )
    return "\n".join(lines)


def write_summary(levels: dict[str, dict[str, Any]], dest: Path, out: Path, command: str, seconds: float) -> Path:
    """``summary.json`` (without the episodes) and ``episodes.jsonl.gz`` in ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    episodes = [line for result in levels.values() for line in result["episodes"]]
    atomic_write_bytes(dest / EPISODES_FILE, gzip_lines(episodes))
    summary = {
        "command": command,
        "written": now(),
        "machine": machine(),
        "seconds": round(seconds, 1),
        "levels": {level: {k: v for k, v in result.items() if k != "episodes"} for level, result in levels.items()},
        "code": code_record([out / level.split(":", 1)[1] for level in levels]),
    }
    atomic_write_text(dest / SUMMARY, json.dumps(summary, indent=1) + "\n")
    return dest / SUMMARY


def build_parser() -> argparse.ArgumentParser:
    """The study's command line (a committed summary's recorded command must still parse with it)."""
    parser = argparse.ArgumentParser(prog="python -m studies.drift_tells.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the run folders (one per level), resumable")
    parser.add_argument("--levels", nargs="+", default=list(LEVELS))
    parser.add_argument("--limit", type=int, default=150, help="test tasks per benchmark (the ladders': 150)")
    parser.add_argument("--seeds", type=int, default=3, help="evaluation seeds (the ladders': 3)")
    parser.add_argument("--summary", type=Path, default=RESULTS, help="where summary.json and the episodes go")
    parser.add_argument("--quick", action="store_true", help="a tiny run (2 tasks per benchmark, 1 seed): tests")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    limit, seeds = (2, 1) if args.quick else (args.limit, args.seeds)
    start = time.time()
    levels = {level: run_level(level, args.out, limit, seeds, not args.no_progress) for level in args.levels}
    command = portable_command("python -m studies.drift_tells.run", list(argv if argv is not None else sys.argv[1:]))
    path = write_summary(levels, args.summary, args.out, command, time.time() - start)
    print(table(levels))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
