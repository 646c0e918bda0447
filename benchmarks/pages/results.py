"""``docs/results.md``: the rate-matched comparison on each executor profile and the zero-shot LLM steerer.

The runs are made by ``python -m benchmarks.harness.results_doc`` (resumable); when a profile is finished it writes
the profile's compact summary into ``docs/results/main/<profile>/`` (:mod:`benchmarks.harness.results_summary`).
This page reads **only** those summaries: a profile without one is listed as not measured yet, with the command
that measures it, so the page never shows a number that no summary holds. ``steer-envs report results`` rebuilds it
(``--out`` another summary folder); the same summaries give the same page, byte for byte.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import asdict
from pathlib import Path
from typing import Any

from baselines.registry import parse_method
from benchmarks.harness.comparison import ComparisonPlan, render_comparison, summary_from_dict
from benchmarks.harness.protocols import OWN_RATE_ROWS, RL, RULE
from benchmarks.harness.results_summary import SUMMARY_ROOT, profile_dir, read_llm, read_summaries
from benchmarks.harness.runner import REFERENCE
from benchmarks.harness.setting import SettingCard
from benchmarks.harness.stats import Interval, MethodSummary
from benchmarks.harness.tables import _ci, comparison_table, display_name, pairwise_table

from .builder import Page, PageContext, page_sections, template, template_section

LLM = "steering_zero_shot"
#: the profiles of the main comparison, in page order
PROFILES = ("sim:default", "sim:loopy", "sim:r1searcher")
#: the acceptance setting; anything smaller makes the page say it is a dry run
FULL = {"limit": 0, "seeds": 3, "train_seeds": 3, "min_llm_limit": 20}
#: the generator's options for one profile at the page's setting (the first 100 test tasks per benchmark; the RL
#: configuration chosen on dev beforehand); a profile's own command replaces it once it is measured
MEASURE = (
    "--limit 100 --dev-limit 20 --seeds 3 --train-seeds 3 --method steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800 "
    "--spearman-tasks 10 --llm-limit 0"
)
GENERATOR = "python -m benchmarks.harness.results_doc"
#: options that only say where files go on the machine that ran it (left out of the commands the page shows)
LOCAL_OPTIONS = ("--out", "--doc", "--summaries", "--checkpoints")


def is_dry_run(args: Any) -> bool:
    """Fewer evaluation or training seeds than the acceptance setting, another split, or too few LLM tasks: the
    numbers only exercise the pipeline. A task subset at full seeds is a result on that subset (see is_subset)."""
    return (
        args.seeds < FULL["seeds"]
        or args.train_seeds < FULL["train_seeds"]
        or args.split != "test"
        or 0 < args.llm_limit < FULL["min_llm_limit"]
    )


def is_subset(args: Any) -> bool:
    return args.limit != FULL["limit"]


def card_from_dict(d: dict) -> SettingCard:
    return SettingCard(**{**d, "commits": tuple(d["commits"])})


def shown_command(command: str, executor: str | None = None) -> str:
    """``command`` without the options that name local paths; with ``executor``: for that profile only."""
    words, kept = shlex.split(command), []
    it = iter(words)
    for w in it:
        if w in LOCAL_OPTIONS:
            next(it, None)  # and its value
            continue
        kept.append(w)
    if executor is not None:
        if "--profiles" in kept:
            i = j = kept.index("--profiles") + 1
            while j < len(kept) and not kept[j].startswith("-"):
                j += 1
            kept[i:j] = [executor]
        else:
            kept[3:3] = ["--profiles", executor]
    return shlex.join(kept)


def measure_command(executor: str, measured: list[dict[str, Any]]) -> str:
    """The command that measures ``executor`` at the setting of the profiles already measured (else :data:`MEASURE`)."""
    if measured:
        return shown_command(measured[0]["command"], executor)
    return f"{GENERATOR} --profiles {executor} {MEASURE}"


def load(out: Path) -> dict[str, Any]:
    from benchmarks.harness.summary_transfer import read_transfer

    summaries = read_summaries(out, PROFILES)
    return {"profiles": summaries, "llm": read_llm(out), "transfer": read_transfer(out), "root": out}


# -- sections ----------------------------------------------------------------------------------------------------
def _measured(ctx: PageContext) -> list[dict[str, Any]]:
    return [s for s in ctx.data["profiles"].values() if s is not None]


def _opts(summary: dict[str, Any]) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(**summary["options"])


def _header(ctx: PageContext) -> str:
    measured = _measured(ctx)
    text = "# Results\n\n"
    if any(is_dry_run(_opts(s)) for s in measured):
        text += template("results_dry_run")
    profiles = ", ".join(f"`{e}`" for e in PROFILES)
    done = ", ".join(f"`{e}`" for e, s in ctx.data["profiles"].items() if s is not None) or "none yet"
    return text + template("results_scope", profiles=profiles, done=done)


def _protocol(ctx: PageContext) -> str:
    measured = _measured(ctx)
    target = measured[0]["plan"]["target"] if measured else 1.0
    return template("results_protocol", target=f"{target:g}") + template("results_links")


def comparison_markdown(summary: dict[str, Any], doc: Path, root: Path) -> str:
    """A profile's comparison rendered from its summary (the renderer ``steer-envs compare`` uses)."""
    plan = ComparisonPlan(
        out=Path("."), **{k: v for k, v in summary["plan"].items() if k in ComparisonPlan.__dataclass_fields__}
    )
    summaries = [summary_from_dict(s) for s in summary["summaries"]]
    pairs = {(p["a"], p["b"]): Interval(p["mean"], p["low"], p["high"]) for p in summary["pairwise"]}
    budgets = {name: row["budget"] for name, row in summary["rows"].items() if row.get("budget") is not None}
    knobs = {name: row["knob"] for name, row in summary["rows"].items()}
    plot = None
    if summary.get("plot"):
        plot = plot_link(profile_dir(root, summary["executor"]) / summary["plot"], doc, root)
    return render_comparison(
        plan,
        summary["benchmarks"],
        summaries,
        pairs,
        budgets,
        knobs,
        card_from_dict(summary["card"]),
        summary.get("curves") or {},
        summary.get("spearman") or {},
        plot,
        not_matched=[name for name, row in summary["rows"].items() if False in (row["matched"], row["budget_matched"])],
    )


def plot_link(path: Path, doc: Path, root: Path) -> str:
    """A plot's link: from ``docs/`` when the summaries are the committed ones (so the page is the same wherever it
    is rebuilt), else relative to the page."""
    if Path(root).resolve() == SUMMARY_ROOT.resolve():
        return Path(path).resolve().relative_to(SUMMARY_ROOT.parent.parent.resolve()).as_posix()
    return Path(os.path.relpath(Path(path).resolve(), Path(doc).parent.resolve())).as_posix()


def _minute(stamp: str) -> str:
    return stamp[:16].replace("T", " ") or "–"


def added_block(summary: dict[str, Any]) -> list[str]:
    """The commands that added rows to the summary later (:mod:`benchmarks.harness.summary_rows`), one per addition."""
    return [
        f"Rows added to this summary later ({', '.join(f'`{name}`' for name in added['rows'])}; trained and "
        "evaluated on its tasks and seeds, paired with its stored episodes):\n\n"
        f"```bash\n{shown_command(added['command'], summary['executor'])}\n```\n\n"
        for added in summary.get("added") or []
    ]


def run_block(summary: dict[str, Any]) -> str:
    """How the profile was measured: the command (and those that added rows later), the subset, and the wall time of
    each part of the run."""
    opts = _opts(summary)
    lines = [f"```bash\n{shown_command(summary['command'], summary['executor'])}\n```\n\n", *added_block(summary)]
    if is_subset(opts) and not is_dry_run(opts):
        lines.append(template("results_subset", limit=opts.limit))
    parts = summary.get("parts") or []
    rows = [
        f"| {i + 1} | {_minute(p['start'])} | {_minute(p['end'])} | {p['machine'] or '–'} | "
        + "; ".join(f"{k} {v / 60:.1f} min" for k, v in p["seconds"].items())
        + " |"
        for i, p in enumerate(parts)
    ]
    total = sum(summary.get("seconds", {}).values()) / 60
    lines.append(
        f"Wall time {total:.1f} min in {len(parts)} part(s) (a part is one invocation; a resumed run on another "
        "machine is another part):\n\n| Part | Start (UTC) | End (UTC) | Machine | Minutes per step |\n"
        "|---:|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
    )
    return "".join(lines)


def against_table(summary: dict[str, Any]) -> str:
    """Every row against no supervision and against the best fixed rule, paired on tasks (training seeds of both
    rows resampled)."""
    none = {p["a"]: Interval(p["mean"], p["low"], p["high"]) for p in summary["vs_none"]}
    rule = {p["a"]: Interval(p["mean"], p["low"], p["high"]) for p in summary["vs_rule"]}
    lines = [
        f"| Method | − {display_name(REFERENCE)} [95% CI] | − {display_name(RULE)} [95% CI] |",
        "|---|---:|---:|",
    ]
    for s in summary["summaries"]:
        name = s["method"]
        lines.append(f"| {display_name(name)} | {_ci(none.get(name), 2)} | {_ci(rule.get(name), 2)} |")
    return "\n".join(lines) + "\n"


#: the comparison's subheadings, named per profile on this page (each anchor then names its profile)
SUBHEADINGS = (
    ("### Rate curves: F1", "### Rate curves ({executor}): F1"),
    ("### The fast path's ranking of", "### The fast path's ranking ({executor}) of"),
)


def trainer_options(label: str) -> str:
    """A trained row's training options as its label writes them (``seed`` and deploy options left out)."""
    given = parse_method(parse_method(label).training_label).given
    return ",".join(f"{k}={v}" for k, v in given.items() if k != "seed") or "defaults"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def own_rate_budgets(summary: dict[str, Any]) -> str:
    """RL steering's training budget and, beside it, each trained own-rate row's (measured env steps, the trainer
    options, the training seeds and, where the summary has it, the wall time of one training seed)."""
    cells = []
    for name in (RL, *OWN_RATE_ROWS):
        row = summary["rows"].get(name)
        if row is None or row.get("budget") in (None, "0"):
            continue
        minutes = f", {_duration(row['build_seconds'])} per seed" if row.get("build_seconds") else ""
        seeds = f"{len(row['labels'])} training seed(s)"
        cells.append(f"{display_name(name)} {row['budget']} (`{trainer_options(row['labels'][0])}`, {seeds}{minutes})")
    if not cells:
        return ""
    return (
        "Training budgets (env steps, counterfactual continuations included, measured; mean over training seeds): "
        + "; ".join(cells)
        + ".\n"
    )


def own_rate_verdicts(summary: dict[str, Any]) -> str:
    """Per own-rate row: its gain over no supervision at its rate, and RL steering minus it (paired)."""
    by_name = {s["method"]: s for s in summary["summaries"]}
    none = {p["a"]: Interval(p["mean"], p["low"], p["high"]) for p in summary["vs_none"]}
    rl = {p["b"]: Interval(p["mean"], p["low"], p["high"]) for p in summary["pairwise"] if p["a"] == RL}
    lines = []
    for name in OWN_RATE_ROWS:
        if name not in by_name:
            continue
        text = (
            f"- {display_name(name)}: {_ci(none.get(name), 2)} F1 over no supervision at "
            f"{by_name[name]['interventions_per_task']:.2f} interventions/task"
        )
        if name in rl:
            text += f"; {display_name(RL)} − {display_name(name)}: {_ci(rl[name], 2)}"
        lines.append(text + ".")
    return "\n".join(lines) + "\n" if lines else ""


def add_rows_command(executor: str, names: list[str]) -> str:
    return f"{GENERATOR} --profiles {executor} --add-rows {' '.join(names)}"


def own_rate_section(summary: dict[str, Any]) -> str:
    """Planning and verification on this profile: what their rows mean and cost, or the command that adds them."""
    executor = summary["executor"]
    present = [name for name in OWN_RATE_ROWS if name in summary["rows"]]
    missing = [name for name in OWN_RATE_ROWS if name not in summary["rows"]]
    paragraphs = []
    if present:
        paragraphs += [template("results_own_rate"), own_rate_budgets(summary), own_rate_verdicts(summary)]
    if missing:
        names = ", ".join(f"`{name}`" for name in missing)
        command = add_rows_command(executor, missing)
        paragraphs.append(template("results_own_rate_not_measured", names=names, command=command))
    heading = f"\n### Planning and verification at their own rate (`{executor}`)\n\n"
    return heading + "\n".join(p for p in paragraphs if p)


def profile_markdown(summary: dict[str, Any], doc: Path, root: Path) -> str:
    text = comparison_markdown(summary, doc, root)
    for old, new in SUBHEADINGS:
        text = text.replace(old, new.format(executor=f"`{summary['executor']}`"))
    heading, _, rest = text.partition("\n\n")
    card = card_from_dict(summary["card"]).markdown()
    return "".join(
        [
            heading,
            "\n\n",
            run_block(summary),
            rest,
            f"\n### Paired against no supervision and the best fixed rule (`{summary['executor']}`)\n\n",
            card,
            "\n",
            "Each row minus the reference, paired on the same tasks and seeds (tasks resampled within benchmarks, "
            "training seeds of both rows resampled; F1 x100).\n\n",
            against_table(summary),
            seed_ranking_section(summary, root),
            own_rate_section(summary),
        ]
    )


def seed_ranking_section(summary: dict[str, Any], root: Path) -> str:
    """The rate-matched rows ranked once per training seed, from the summary's stored episodes."""
    from benchmarks.harness.results_summary import EPISODES_FILE, read_episodes
    from benchmarks.harness.seed_ranking import ranking_markdown, seed_rankings

    path = profile_dir(root, summary["executor"]) / EPISODES_FILE
    if RL not in summary["rows"] or not path.is_file():
        return ""
    rankings = seed_rankings(summary, read_episodes(path))
    return (
        f"\n### Ranking per training seed (`{summary['executor']}`)\n\n"
        "The rate-matched rows ranked with each training seed's run of every learned row (a fixed row's one run in "
        "each), on the same tasks and evaluation seeds:\n\n" + ranking_markdown(rankings, RL)
    )


def _profiles(ctx: PageContext) -> str:
    measured = _measured(ctx)
    parts = []
    for executor, summary in ctx.data["profiles"].items():
        if summary is None:
            parts.append(
                f"## Rate-matched comparison on `{executor}`, test split\n\n"
                + template("results_not_measured", command=measure_command(executor, measured))
            )
        else:
            parts.append(profile_markdown(summary, ctx.doc, ctx.data["root"]))
        parts.append("\n")
    return "".join(parts)


def llm_verdict(summaries: list[MethodSummary], pairs: dict[tuple[str, str], Interval]) -> str:
    llm = next(s for s in summaries if s.method == LLM)
    if llm.avg_gain is None:  # every episode of the row failed: nothing to read a verdict from
        return f"**Verdict:** none: no task of the zero-shot LLM steerer's row was scored ({llm.failed} failed).\n"
    text = (
        f"**Verdict:** the zero-shot LLM steerer changes F1 by {llm.avg_gain.mean:+.2f} "
        f"[{llm.avg_gain.low:+.2f}, {llm.avg_gain.high:+.2f}] over no supervision at "
        f"{llm.interventions_per_task:.2f} interventions/task"
    )
    if (LLM, RL) in pairs:
        gap = pairs[(LLM, RL)]
        text += f"; against {display_name(RL)} on the same tasks: {gap.mean:+.2f} [{gap.low:+.2f}, {gap.high:+.2f}]"
    return text + ".\n"


def llm_model_name(spec: str) -> tuple[str, bool]:
    """The zero-shot spec's model as a reader names it, and whether it is served (``openai:<name>@<url>``)."""
    model = str(parse_method(spec).given.get("model", "hf:gemma-3-270m"))
    if model.startswith("openai:"):
        return model.removeprefix("openai:").split("@", 1)[0], True
    return model.removeprefix("hf:"), False


def llm_markdown(data: dict[str, Any]) -> str:
    """The zero-shot LLM section from its summary (``docs/results/main/llm/summary.json``)."""
    summaries = [summary_from_dict(s) for s in data["summaries"]]
    pairs = {(p["a"], p["b"]): Interval(p["mean"], p["low"], p["high"]) for p in data["pairwise"]}
    name, served = llm_model_name(data["model"])
    seconds = data.get("seconds", {})
    timing = "; ".join(f"{part} {value / 60:.1f} min" for part, value in seconds.items())
    return "".join(
        [
            f"## Zero-shot steering with a prompted LLM ({name})\n\n",
            card_from_dict(data["card"]).markdown(),
            "\n",
            template(
                "results_llm",
                how=template("results_llm_served") if served else template("results_gemma_note"),
                spec=data["model"],
                llm_limit=data["llm_limit"],
                llm_dev_limit=data["llm_dev_limit"],
            ),
            comparison_table(summaries, data["benchmarks"], {}, data["knobs"]),
            "\n",
            pairwise_table([(a, b, i) for (a, b), i in pairs.items()]),
            "\n",
            llm_verdict(summaries, pairs),
            f"\nWall time: {timing}.\n" if timing else "",
            f"\n```bash\n{shown_command(data['command'])}\n```\n" if data.get("command") else "",
        ]
    )


def llm_data(
    model: str,
    llm_limit: int,
    llm_dev_limit: int,
    card: SettingCard,
    summaries: list[MethodSummary],
    pairs: dict[tuple[str, str], Interval],
    knobs: dict[str, str],
    benchmarks,
    seconds: dict[str, float],
    command: str,
) -> dict[str, Any]:
    """What the LLM section's summary holds (written by the generator, read by :func:`llm_markdown`): ``model`` is
    the zero-shot method's spec; ``seconds`` the wall time of each part."""
    from benchmarks.harness.comparison import _summary_dict

    return {
        "model": model,
        "llm_limit": llm_limit,
        "llm_dev_limit": llm_dev_limit,
        "card": asdict(card),
        "summaries": [_summary_dict(s) for s in summaries],
        "pairwise": [{"a": a, "b": b, **asdict(i)} for (a, b), i in pairs.items()],
        "knobs": knobs,
        "benchmarks": list(benchmarks),
        "seconds": seconds,
        "command": command,
    }


def _llm(ctx: PageContext) -> str:
    if ctx.data["llm"]:
        return llm_markdown(ctx.data["llm"]) + "\n"
    return "## Zero-shot steering with a prompted LLM (gemma-3-270m)\n\n" + template(
        "results_llm_not_measured",
        gemma_note=template("results_gemma_note"),
        command=f"{GENERATOR} --profiles sim:default {MEASURE.replace('--llm-limit 0', '--llm-limit 20')}",
    )


def interval_text(d: dict[str, Any]) -> str:
    """A stored interval (``mean``, ``low``, ``high``) as the tables write it: ``+1.23 [+0.45, +2.01]``."""
    return f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def transfer_markdown(data: dict[str, Any]) -> str:
    """The transfer section from its summary (``docs/results/main/transfer/summary.json``)."""
    from benchmarks.harness.summary_transfer import TRANSFERRED

    lines = [
        "| Trained on | Evaluated on | F1 | Δ vs no supervision [95% CI] | Δ vs best fixed rule [95% CI] | "
        "Δ vs RL steering trained on it [95% CI] | Int./task (its own RL) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    commits: list[str] = []
    minutes = 0.0
    for cell in data["cells"]:
        rows = {s["method"]: s for s in cell["summaries"]}
        pairs = {p["b"]: p for p in cell["pairwise"]}
        moved, own = rows[TRANSFERRED], rows[RL]
        lines.append(
            f"| `{cell['source']}` | `{cell['target']}` | {moved['avg_f1']:.2f} | {interval_text(pairs[REFERENCE])} | "
            f"{interval_text(pairs[RULE])} | {interval_text(pairs[RL])} | "
            f"{moved['interventions_per_task']:.2f} ({own['interventions_per_task']:.2f}) |"
        )
        commits += [c for c in cell["commits"] if c not in commits]
        minutes += cell["part"]["seconds"] / 60
    card = (
        "*Setting: each row on the evaluated profile's test tasks and evaluation seeds (those of its comparison and "
        "its setting card), paired with its stored episodes; the steerers are the training profile's RL steering row "
        "(each training seed with the τ chosen on the training profile's dev split, nothing re-tuned); "
        f"commit(s) {', '.join(f'`{c}`' for c in commits)}.*"
    )
    commands = "\n".join(shown_command(c) for c in data["commands"])
    return (
        "## Transfer across profiles\n\n"
        + card
        + "\n\n"
        + template("results_transfer_measured")
        + "\n".join(lines)
        + f"\n\nWall time: {minutes:.1f} min of evaluation in all.\n\n```bash\n{commands}\n```\n\n"
    )


def drift_markdown(drift_root: Path) -> str:
    """The synthetic drift family at a glance: per level, the ladder's learnable ceiling and the compared algorithms
    against the best fixed rule, from the drift page's committed summaries (nothing when none is there)."""
    from .ladders import DRIFT_LEVELS, read_ladder, setting_commits

    rows, commits = [], []
    for level in DRIFT_LEVELS:
        data = read_ladder(drift_root / level)
        summary = read_summaries(drift_root, (f"sim:{level}",))[f"sim:{level}"]
        if data is None or summary is None:
            continue
        ceiling = next(r for r in data["ladder"]["rows"] if r["rung"] == "learnable_ceiling")
        vs_rule = {pair["a"]: pair for pair in summary["vs_rule"]}
        cells = [interval_text(vs_rule[m]) if m in vs_rule else "–" for m in ("steering_rl", "sb3_ppo")]
        rows.append(f"| `sim:{level}` | {interval_text(ceiling['vs_best_fixed_rule'])} | {cells[0]} | {cells[1]} |")
        commits += [*setting_commits(data["setting"]), *summary["card"]["commits"]]
    if not rows:
        return ""
    shown = ", ".join(f"`{c}`" for c in dict.fromkeys(commits))
    return (
        "## The synthetic drift family\n\n"
        + template("results_drift")
        + "| Level | Learnable ceiling − best fixed rule (ladder) | RL steering − best fixed rule | "
        "SB3 PPO − best fixed rule |\n|---|---:|---:|---:|\n" + "\n".join(rows) + "\n\n"
        "*Setting: each level's ladder card and comparison card on results_drift.md (split **test**; the ladder's "
        f"choices and the comparison's knobs made on dev); commits {shown}.*\n"
    )


def _drift(ctx: PageContext) -> str:
    return drift_markdown(Path(ctx.data["root"]).parent / "drift")


def _transfer(ctx: PageContext) -> str:
    if ctx.data["transfer"] and ctx.data["transfer"]["cells"]:
        return transfer_markdown(ctx.data["transfer"])
    return template("results_transfer")


PAGE = Page(
    name="results",
    help="the rate-matched comparison on each profile and the zero-shot LLM steerer, from docs/results/main",
    doc="docs/results.md",
    out=str(SUMMARY_ROOT),
    load=load,
    sections=page_sections(
        _header,
        _protocol,
        _profiles,
        _llm,
        _transfer,
        _drift,
        template_section("executors", "results_executors"),
    ),
)
