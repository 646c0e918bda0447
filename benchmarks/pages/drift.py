"""``docs/results_drift.md``: the headroom ladder of the synthetic drift family (``sim:drift1..3``).

Every number is read from the committed summaries in ``docs/results/drift/<level>/``: ``ladder.json`` and
``ladder.md`` (what ``steer-envs headroom`` wrote: rows with the paired intervals of
:class:`~benchmarks.harness.stats.HierarchicalBootstrap`, dev choices, timings, the setting line with the commit),
``run.json`` (the exact command and its wall time) and ``leak.md`` (what ``python -m benchmarks.leak_test`` printed).
The level's construction (tell clarity, misfit cost, hazard) is read from its profile. ``steer-envs report
results_drift`` rebuilds the page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.harness.results_summary import read_summaries
from benchmarks.harness.summary_transfer import read_transfer
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.sim import load_profile

from .builder import Page, PageContext, page_sections, template, template_section

LEVELS: tuple[str, ...] = ("drift1", "drift2", "drift3")
#: the rungs the page reads (in this order), with their labels
LABELS: dict[str, str] = {
    "none": "none",
    "random": "random",
    "best_fixed_rule": "best fixed rule",
    "learnable_ceiling": "learnable ceiling",
    "learnable_ceiling_free": "learnable ceiling (free rate)",
    "lookahead_planner": "lookahead planner",
    "oracle": "oracle",
}


def _read(path: Path) -> str:
    if not path.is_file():
        raise SteerEnvsError(
            f"{path} is missing: run the level's command of docs/results_drift.md and copy its summary"
        )
    return path.read_text(encoding="utf-8")


def load(out: Path) -> dict[str, Any]:
    levels = {}
    for level in LEVELS:
        folder = out / level
        if not folder.is_dir():
            continue
        has_ladder = (folder / "ladder.json").is_file() or (folder / "run.json").is_file()
        levels[level] = {
            "ladder": json.loads(_read(folder / "ladder.json")) if has_ladder else None,
            "setting": _read(folder / "ladder.md").splitlines()[0] if has_ladder else "",
            "run": json.loads(_read(folder / "run.json")) if has_ladder else {},
            "leak": _read(folder / "leak.md") if (folder / "leak.md").is_file() else None,
            "leak_run": json.loads(_read(folder / "leak_run.json")) if (folder / "leak.md").is_file() else None,
            "subsets": {
                p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*/ladder.json"))
            },
        }
    if not levels:
        raise SteerEnvsError(f"{out} holds no level folder ({', '.join(LEVELS)})")
    comparisons = read_summaries(out, tuple(f"sim:{level}" for level in LEVELS))
    return {
        "levels": levels,
        "comparisons": {e.removeprefix("sim:"): s for e, s in comparisons.items()},
        "transfer": read_transfer(out),
        "diagnosis": _optional_json(out / "diagnosis" / "diagnosis.json"),
        "out": out,
    }


def _optional_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _ci(iv: dict | None) -> str:
    return "" if not iv else f"{iv['mean']:+.1f} [{iv['low']:+.1f}, {iv['high']:+.1f}]"


def ladder_table(ladder: dict[str, Any]) -> str:
    choices = ladder["choices"]
    lines = [
        "| rung | F1 | gain vs none [95% CI] | vs best fixed rule [95% CI] | int./task | turns/task |",
        "|---|---|---|---|---|---|",
    ]
    for row in ladder["rows"]:
        label = LABELS.get(row["rung"], row["rung"])
        if row["rung"] == "best_fixed_rule" and "best_fixed_rule" in choices:
            label += f" (`{choices['best_fixed_rule']['option']}@{choices['best_fixed_rule']['at']}`)"
        if row["rung"].startswith("learnable_ceiling") and row["rung"] in choices:
            c = choices[row["rung"]]
            label += f" ({c['learner']}, thr {c['threshold']:.3f})"
        lines.append(
            f"| {label} | {row['f1']:.1f} | {_ci(row.get('gain'))} | {_ci(row.get('vs_best_fixed_rule'))} | "
            f"{row['interventions_per_task']:.2f} | {row['turns_per_task']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def reading(ladder: dict[str, Any]) -> str:
    """The level's verdict from its own rows: learnable ceiling vs the best fixed rule, and the oracle above it."""
    rows = {r["rung"]: r for r in ladder["rows"]}
    ceiling, oracle = rows.get("learnable_ceiling"), rows.get("oracle")
    if ceiling is None or "vs_best_fixed_rule" not in ceiling:
        return ""
    iv = ceiling["vs_best_fixed_rule"]
    met = iv["mean"] >= 5 and iv["low"] > 0
    text = (
        f"Learnable ceiling − best fixed rule = {_ci(iv)} F1 "
        f"({'met' if met else 'not met'}: ≥ +5 with the interval above 0)"
    )
    if oracle is not None:
        text += f"; oracle {oracle['f1']:.1f} vs learnable ceiling {ceiling['f1']:.1f} F1"
    return text + ".\n"


def _scale(ladder: dict[str, Any], run: dict[str, Any]) -> str:
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


def _leak(data: dict[str, Any]) -> str:
    if not data["leak"]:
        return ""
    run = data["leak_run"]
    return f"**Leak test** (`{run['command']}`, {run['wall_s'] / 60:.1f} min):\n\n" + data["leak"].strip() + "\n\n"


def _level(level: str, data: dict[str, Any]) -> str:
    profile = load_profile(level)
    card = (
        f"## `sim:{level}`\n\n"
        f"*{profile.description}* Tell clarity {profile.tell_clarity:g}, misfit cost {profile.misfit_cost:g}, "
        f"drift hazard {profile.hazard_base:g} + {profile.hazard_growth:g} x turn (times a per-episode propensity), "
        f"recovery without a note {profile.drift_recover:g}, compliance {profile.compliance:g}.\n\n"
    )
    ladder, run = data["ladder"], data["run"]
    if ladder is None:
        return card + "No headroom ladder is recorded for this level.\n\n" + _leak(data)
    wall = sum(float(v) for v in ladder.get("timings_s", {}).values())
    parts = [
        card,
        "```bash\n" + run["command"] + "\n```\n\n",
        data["setting"] + "\n\n",
        _scale(ladder, run) + "\n",
        ladder_table(ladder) + "\n",
        reading(ladder) + "\n",
        f"Wall time of the rungs: {wall / 60:.1f} min ({run.get('machine', 'the shared 2-core machine')}).\n\n",
    ]
    for name, sub in data["subsets"].items():
        sub_cfg = sub["config"]
        parts.append(
            f"**`{name}`**: the first {sub_cfg['limit']} test tasks per benchmark x {sub_cfg['seeds']} seeds (the "
            f"same seeds), with the lookahead planner ({sub_cfg['planner_forks']} forks per option) and the oracle "
            f"(lookahead {sub_cfg['oracle_lookahead']}); any learned or chosen rung uses the dev choices and models "
            "above:\n\n" + ladder_table(sub) + "\n" + reading(sub) + "\n"
        )
    parts.append(_leak(data))
    return "".join(parts)


#: the main comparison's setting, on a drift level (planning and verification left out: they do not read drift)
ALGORITHMS_COMMAND = (
    "python -m benchmarks.harness.results_doc --profiles sim:{level} --limit 100 --dev-limit 20 --seeds 3 "
    "--train-seeds 3 --rl steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800 --spearman-tasks 10 --no-curves "
    "--own-rate-rows --llm-limit 0 --summaries docs/results/drift --doc runs/drift_main.md\n"
    "steer-envs report results_drift   # rebuilds this page with the level's summary"
)


def _algorithms(level: str, ctx: PageContext) -> str:
    """The main harness's rate-matched comparison on the level, from its summary (``docs/results/drift/sim_<level>/``),
    headings one level down; or the command that measures it."""
    from .results import profile_markdown

    summary = ctx.data["comparisons"].get(level)
    heading = f"### The algorithms on `sim:{level}`\n\n"
    if summary is None:
        return (
            heading
            + "Not measured yet on this level. The main page's rate-matched comparison (3 training x 3 evaluation "
            "seeds, every knob chosen on dev) measures it:\n\n```bash\n"
            + ALGORITHMS_COMMAND.format(level=level)
            + "\n```\n\n"
        )
    text = profile_markdown(summary, ctx.doc, ctx.data["out"])
    text = text.replace("\n### ", "\n#### ")
    body = text.partition("\n\n")[2]  # the comparison's own heading gives way to this section's
    return heading + body + "\n"


#: what each diagnosis variant changes (studies/drift_diagnosis/run.py's VARIANTS)
VARIANT_TEXT = {
    "paper": "nothing: the comparison's RL steerer",
    "rank_any": "the fast path's ranking loss on pairs of states of any task, not only of the same task",
    "twice_rounds": "twice the training rounds",
}


def diagnosis_markdown(data: dict[str, Any]) -> str:
    """The dev ablations of the paper's trainer and, when one beats it on dev, its test pairs."""
    from benchmarks.harness.tables import display_name

    from .results import interval_text

    lines = [
        "| Variant | What it changes | Dev gain over none [95% CI] | Dev int./task | Fast path's Spearman with q(s), "
        "within / across tasks (dev) | Minutes |",
        "|---|---|---:|---:|---:|---:|",
    ]
    commits = []
    for name, rec in data["variants"].items():
        dev, rho = rec["dev"], rec["spearman_dev"]
        lines.append(
            f"| `{name}` | {VARIANT_TEXT.get(name, name)} | {interval_text(dev['avg_gain'])} | "
            f"{dev['interventions_per_task']:.2f} | {rho['within']:+.3f} / {rho['across']:+.3f} | "
            f"{rec['seconds'] / 60:.1f} |"
        )
        commits += [rec["commit"]] if rec["commit"] not in commits else []
    parts = [
        f"### Where RL steering loses its margin on `{data['executor']}` (ablations chosen on dev)\n\n",
        f"*Setting: the comparison's dev split and RL trainer options; each variant's training seeds rate-matched "
        f"on dev to ~1 intervention per task; commit(s) {', '.join(f'`{c}`' for c in commits)}.*\n\n",
        template("drift_diagnosis"),
        "\n".join(lines) + "\n\n",
        f"Dev rule (fixed before the test run): {data['rule']}. Chosen: `{data['chosen']}`.\n\n",
    ]
    test = data.get("test")
    if test:
        rows = ["| Comparison (A − B) | ΔF1 [95% CI] |", "|---|---:|"]
        for pair in test["pairwise"]:
            rows.append(f"| `{pair['a']}` − {display_name(pair['b'])} | {interval_text(pair)} |")
        parts.append(
            f"On test (the comparison's tasks and seeds, paired with its stored rows; commit `{test['commit']}`, "
            f"{test['seconds'] / 60:.1f} min):\n\n" + "\n".join(rows) + "\n\n"
        )
    else:
        parts.append("No variant beat the paper's trainer on dev, so none was run on test.\n\n")
    from .results import shown_command

    parts.append(f"```bash\n{shown_command(data['command'])}\n```\n\n")
    return "".join(parts)


def _diagnosis(level: str, ctx: PageContext) -> str:
    data = ctx.data["diagnosis"]
    return diagnosis_markdown(data) if data and data["executor"] == f"sim:{level}" else ""


def _transfer(ctx: PageContext) -> str:
    """Steerers trained on one level (or on ``sim:default``) deployed unchanged on another, from
    ``docs/results/drift/transfer/`` (``results_doc --transfer``); nothing when it is not measured."""
    from .results import transfer_markdown

    data = ctx.data["transfer"]
    if not data or not data["cells"]:
        return ""
    return transfer_markdown(data).replace("## Transfer across profiles", "## Transfer across levels and profiles", 1)


def _levels(ctx: PageContext) -> str:
    levels = ctx.data["levels"].items()
    return "".join(_level(level, data) + _algorithms(level, ctx) + _diagnosis(level, ctx) for level, data in levels)


PAGE = Page(
    name="results_drift",
    help="the synthetic drift family's headroom ladders (sim:drift1..3)",
    doc="docs/results_drift.md",
    out="docs/results/drift",
    load=load,
    sections=page_sections(
        template_section("intro", "drift_intro"), _levels, _transfer, template_section("weak", "drift_weak")
    ),
)

__all__ = ["LEVELS", "PAGE", "ladder_table", "load", "reading"]
