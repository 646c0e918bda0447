"""A headroom ladder as the results pages show it, read from a committed ladder folder.

``steer-envs headroom --out RUN`` writes ``ladder.json`` (rows with the paired intervals of
:class:`~benchmarks.harness.stats.HierarchicalBootstrap`, dev choices, timings), ``ladder.md`` (whose first line is
the setting, with the commit) and ``choices.json``; the folder committed under ``docs/results/`` adds ``run.json``
(the exact command, the test episodes, the machine). The drift page (one ladder per level) and the testbed page
(one per shipped profile) render the same folder the same way, from here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from steer_envs.errors import SteerEnvsError
from steer_envs.executors.sim import load_profile
from steer_envs.executors.sim.profile import shipped_profiles

#: the synthetic drift family's levels: the shipped profiles that run the ``kinds`` dynamics (drift of a kind an
#: observer can read); the drift page shows one ladder per level and the main results page a row per level
DRIFT_LEVELS: tuple[str, ...] = tuple(name for name in shipped_profiles() if load_profile(name).dynamics == "kinds")

#: the rungs' labels on the pages
LABELS: dict[str, str] = {
    "none": "none",
    "random": "random",
    "best_fixed_rule": "best fixed rule",
    "learnable_ceiling": "learnable ceiling",
    "learnable_ceiling_free": "learnable ceiling (free rate)",
    "lookahead_planner": "lookahead planner",
    "oracle": "oracle",
}


def read_text(path: Path) -> str:
    if not path.is_file():
        raise SteerEnvsError(f"{path} is missing: run the command its page shows and copy the run's summary there")
    return path.read_text(encoding="utf-8")


def read_ladder(folder: Path) -> dict[str, Any] | None:
    """The ladder of ``folder`` (its rows, its setting line, its run record); None when it holds none."""
    if not ((folder / "ladder.json").is_file() or (folder / "run.json").is_file()):
        return None
    return {
        "ladder": json.loads(read_text(folder / "ladder.json")),
        "setting": read_text(folder / "ladder.md").splitlines()[0],
        "run": json.loads(read_text(folder / "run.json")),
    }


def setting_commits(setting: str) -> list[str]:
    """The commits a ladder's setting line names (``ladder.md``'s first line), in order: what a table built from
    several ladders states on its own card."""
    return re.findall(r"commit `([0-9a-f]{7}(?:\+dirty)?)`", setting)


def interval(iv: Mapping[str, float] | None) -> str:
    return "" if not iv else f"{iv['mean']:+.1f} [{iv['low']:+.1f}, {iv['high']:+.1f}]"


def _label(row: Mapping[str, Any], choices: Mapping[str, Any]) -> str:
    label = LABELS.get(row["rung"], row["rung"])
    if row["rung"] == "best_fixed_rule" and "best_fixed_rule" in choices:
        label += f" (`{choices['best_fixed_rule']['option']}@{choices['best_fixed_rule']['at']}`)"
    if row["rung"].startswith("learnable_ceiling") and row["rung"] in choices:
        c = choices[row["rung"]]
        label += f" ({c['learner']}, thr {c['threshold']:.3f})"
    return label


def ladder_table(ladder: Mapping[str, Any]) -> str:
    lines = [
        "| rung | F1 | gain vs none [95% CI] | vs best fixed rule [95% CI] | int./task | turns/task |",
        "|---|---|---|---|---|---|",
    ]
    for row in ladder["rows"]:
        lines.append(
            f"| {_label(row, ladder['choices'])} | {row['f1']:.1f} | {interval(row.get('gain'))} | "
            f"{interval(row.get('vs_best_fixed_rule'))} | {row['interventions_per_task']:.2f} | "
            f"{row['turns_per_task']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def reading(ladder: Mapping[str, Any]) -> str:
    """The ladder's verdict from its own rows: learnable ceiling vs the best fixed rule, and the oracle above it."""
    rows = {r["rung"]: r for r in ladder["rows"]}
    ceiling, oracle = rows.get("learnable_ceiling"), rows.get("oracle")
    if ceiling is None or "vs_best_fixed_rule" not in ceiling:
        return ""
    iv = ceiling["vs_best_fixed_rule"]
    met = iv["mean"] >= 5 and iv["low"] > 0
    text = (
        f"Learnable ceiling − best fixed rule = {interval(iv)} F1 "
        f"({'met' if met else 'not met'}: ≥ +5 with the interval above 0)"
    )
    if oracle is not None:
        text += f"; oracle {oracle['f1']:.1f} vs learnable ceiling {ceiling['f1']:.1f} F1"
    return text + ".\n"


def scale_line(ladder: Mapping[str, Any], run: Mapping[str, Any]) -> str:
    cfg, rows = ladder["config"], {r["rung"]: r for r in ladder["rows"]}
    episodes = int(run.get("test_episodes", 0))
    return (
        f"Scale: {episodes} paired test episodes per rung ({cfg['limit']} tasks per benchmark or all, "
        f"{cfg['seeds']} seeds); dev choices on {cfg['dev_limit']} dev tasks per benchmark x {cfg['dev_seeds']} "
        + (
            f"seed; learnable ceiling fitted on {ladder['choices']['train_decisions']} train decisions "
            f"({cfg['train_tasks']} train tasks per benchmark or all, {cfg['train_forks']} forks per option, the "
            f"same seeds for every option)"
            if "train_decisions" in ladder["choices"]
            else "seed"
        )
        + f"; rungs recorded: {', '.join(r for r in rows)}.\n"
    )


def dev_choices_line(ladder: Mapping[str, Any]) -> str:
    """What dev chose (the rule, random's rate, the learnable ceiling's learner and threshold), from the ladder; a
    choice the ladder does not record is left out."""
    c = ladder["choices"]
    parts = []
    rule = c.get("best_fixed_rule", {})
    if {"option", "at", "gain", "interventions"} <= rule.keys():
        parts.append(
            f"best fixed rule `{rule['option']}@{rule['at']}` (dev {rule['gain']:+.1f} over none at "
            f"{rule['interventions']:.2f}/task)"
        )
    if "random_p" in c and "dev_decisions_per_task" in c:
        parts.append(
            f"random p = {c['random_p']:.3f} (the rule's dev rate / none's {c['dev_decisions_per_task']:.2f} "
            "decisions per task)"
        )
    for rung in ("learnable_ceiling", "learnable_ceiling_free"):
        m = c.get(rung, {})
        if {"learner", "threshold", "f1", "interventions"} <= m.keys():
            parts.append(
                f"{LABELS[rung]} `{m['learner']}` threshold {m['threshold']:.4f} (dev {m['f1']:.1f} F1 at "
                f"{m['interventions']:.2f}/task)"
            )
    if "dev_none_f1" in c:
        parts.append(f"dev none {c['dev_none_f1']:.1f} F1")
    return ("Dev choices: " + "; ".join(parts) + ".\n") if parts else ""


def ladder_block(data: Mapping[str, Any]) -> str:
    """Command, setting, scale, table, verdict and wall time of one ladder (:func:`read_ladder`'s record)."""
    ladder, run = data["ladder"], data["run"]
    wall = sum(float(v) for v in ladder.get("timings_s", {}).values())
    return "".join(
        [
            "```bash\n" + run["command"] + "\n```\n\n",
            data["setting"] + "\n\n",
            scale_line(ladder, run) + "\n",
            ladder_table(ladder) + "\n",
            reading(ladder) + "\n",
            dev_choices_line(ladder) + "\n",
            f"Wall time of the rungs: {wall / 60:.1f} min ({run.get('machine', 'the shared 2-core machine')}).\n\n",
        ]
    )


def headroom_overview(ladders: Mapping[str, Mapping[str, Any]]) -> str:
    """One row per ladder: the best fixed rule over none, and the learnable ceiling, the lookahead planner and the
    oracle over the rule (paired intervals), so the profiles' headroom reads side by side."""
    lines = [
        "| executor | none F1 | best fixed rule − none | learnable ceiling − rule | lookahead planner − rule | "
        "oracle − rule | paired test episodes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, data in ladders.items():
        rows = {r["rung"]: r for r in data["ladder"]["rows"]}

        def vs_rule(rung: str, rows: dict = rows) -> str:
            return interval(rows[rung].get("vs_best_fixed_rule")) if rung in rows else "–"

        rule = rows.get("best_fixed_rule", {})
        lines.append(
            f"| `{name}` | {rows['none']['f1']:.1f} | {interval(rule.get('gain')) or '–'} | "
            f"{vs_rule('learnable_ceiling')} | {vs_rule('lookahead_planner')} | {vs_rule('oracle')} | "
            f"{data['run'].get('test_episodes', '–')} |"
        )
    return "\n".join(lines) + "\n"
