"""Transfer across profiles on the main page's setting (``results_doc --transfer SOURCE``).

Why: the paper's claim is a steerer that generalises; on the simulator the closest check is a steerer trained on one
executor profile and deployed unchanged on another. The question is asked on the main comparison's own terms, so its
answer can sit on the same page: the transferred steerer is the source profile's RL row (every training seed, each
with the τ chosen on the *source's* dev split: nothing is re-tuned for the target), and it is evaluated on the
target's summarised tasks and seeds, so it pairs with the target's stored episodes of no supervision, the best fixed
rule and the RL steerer trained on the target itself.

The trained models come from the source comparison's run folder (``--transfer-from``: its ``checkpoints``), which
must still be on the machine; a label without a finished model there is refused, never retrained on the target.
Each finished cell is written at once to ``SUMMARIES/transfer/`` (``summary.json`` with every number the page shows,
``episodes.jsonl.gz`` with the transferred rows' episodes), so the page rebuilds without a run folder.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from baselines.registry import parse_method
from steer_envs.atomic import atomic_write_bytes, atomic_write_text
from steer_envs.errors import SteerEnvsError
from steer_envs.rollouts import using_pool

from .comparison import Comparison, Row, _summary_dict, row_runs
from .protocols import RL, RULE
from .provenance import code_version, read_runs
from .results_summary import EPISODES_FILE, SUMMARY_FILE, episode_lines, gzip_lines, machine, now, read_episodes
from .runner import REFERENCE, evaluate
from .stats import HierarchicalBootstrap, summarize_rows
from .summary_rows import StoredProfile, check_same_setting, stored_plan
from .sweeps import executor_dirname

#: where the transfer summary lives under the summaries root
TRANSFER_DIR = "transfer"
#: the transferred row's name in a cell (the target's own rows keep theirs)
TRANSFERRED = "transferred"
#: the target's stored rows every cell is paired with
PAIRED_WITH = (REFERENCE, RULE, RL)


def read_transfer(root: Path) -> dict[str, Any] | None:
    path = Path(root) / TRANSFER_DIR / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def source_labels(source: StoredProfile, checkpoints: Path, probe: Comparison) -> list[str]:
    """The source's RL labels (one per training seed, τ chosen on its dev), each with a finished model in
    ``checkpoints``; refused otherwise (evaluating it would train a new steerer on the target)."""
    from agents.steering.trainer import CONFIG_FILE, MODEL_FILE

    labels = list(source.summary["rows"][RL]["labels"])
    missing = []
    for label in labels:
        folder = probe.dev.checkpoint_dir(parse_method(label).training_label)
        if not (folder / MODEL_FILE).is_file():
            missing.append(str(folder))
            continue
        trained_on = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))["config"]["executor"]
        if trained_on != source.summary["executor"]:
            raise SteerEnvsError(
                f"{folder} holds a steerer trained on {trained_on}, not on {source.summary['executor']}: "
                "--transfer-from must be the source profile's own run folder"
            )
    if missing:
        raise SteerEnvsError(
            f"no finished model for {len(missing)} of the source's RL labels under {checkpoints} (e.g. {missing[0]}): "
            "--transfer-from must be the source profile's run folder (results_doc --out OUT/<profile>) with its "
            "checkpoints; the transferred steerer is never retrained"
        )
    return labels


def measure_cell(
    root: Path,
    source: StoredProfile,
    target_executor: str,
    checkpoints: Path,
    out: Path,
    log: Callable[[str], None] = print,
    **local: Any,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Evaluate the source's RL steerers on the target's summarised tasks and seeds; the cell's numbers, paired with
    the target's stored rows, and the transferred episodes."""
    target = StoredProfile.read(root, target_executor)
    plan = replace(stored_plan(target.summary, out, **local), checkpoints=checkpoints, own_rate_rows=())
    cmp = Comparison(plan, log)
    check_same_setting(cmp.report, target)
    labels = source_labels(source, checkpoints, cmp)
    started, t0 = now(), time.perf_counter()
    with using_pool(plan.pool) as pool:
        for label in labels:
            evaluate(cmp.report, label, progress=plan.progress, log=log, pool=pool)
    seconds = round(time.perf_counter() - t0, 1)
    rows = {TRANSFERRED: Row(TRANSFERRED, labels, source.summary["rows"][RL].get("knob", "–"))}
    stored = target.runs()
    runs = [stored[name] for name in PAIRED_WITH] + row_runs(cmp.report, rows)
    names = [r.name for r in runs]
    benchmarks = target.summary["benchmarks"]
    boot = HierarchicalBootstrap(runs, benchmarks)
    summaries = summarize_rows(runs, benchmarks, reference=REFERENCE, boot=boot)
    commits = [e.commit for e in read_runs(cmp.report.root) if e.label in labels]
    cell = {
        "source": source.summary["executor"],
        "target": target_executor,
        "labels": labels,
        "summaries": [_summary_dict(s) for s in summaries if s.method in names],
        "pairwise": [{"a": TRANSFERRED, "b": name, **asdict(boot.gain(TRANSFERRED, name)[1])} for name in PAIRED_WITH],
        "tasks": target.summary["card"]["tasks"],
        "seeds": target.summary["card"]["seeds"],
        "commits": sorted(set(commits)) or [code_version()],
        "part": {"start": started, "end": now(), "machine": machine(), "seconds": seconds},
    }
    lines = [{**line, "source": cell["source"], "target": target_executor} for line in episode_lines(cmp.report, rows)]
    return cell, lines


def add_transfer(
    root: Path,
    source_executor: str,
    targets: list[str],
    source_out: Path,
    out: Path,
    command: str,
    log: Callable[[str], None] = print,
    **local: Any,
) -> Path:
    """Measure every ``source → target`` cell not yet in ``root/transfer/`` and write each as it finishes."""
    source = StoredProfile.read(root, source_executor)
    checkpoints = Path(source_out) / "checkpoints"
    folder = Path(root) / TRANSFER_DIR
    folder.mkdir(parents=True, exist_ok=True)
    data = read_transfer(root) or {"cells": [], "commands": []}
    episodes = read_episodes(folder / EPISODES_FILE) if (folder / EPISODES_FILE).is_file() else []
    for target in targets:
        if target == source_executor:
            continue  # the diagonal is the target's own RL row, already on the page
        if any(c["source"] == source_executor and c["target"] == target for c in data["cells"]):
            log(f"[transfer] {source_executor} -> {target}: in the summary already")
            continue
        log(f"[transfer] {source_executor} -> {target}")
        cell_out = Path(out) / f"{executor_dirname(source_executor)}__on__{executor_dirname(target)}"
        cell, lines = measure_cell(root, source, target, checkpoints, cell_out, log, **local)
        data["cells"].append(cell)
        episodes += lines
        if command not in data["commands"]:
            data["commands"].append(command)
        data["written"] = now()
        atomic_write_bytes(folder / EPISODES_FILE, gzip_lines(episodes))
        atomic_write_text(folder / SUMMARY_FILE, json.dumps(data, indent=1, default=str) + "\n")
    return folder
