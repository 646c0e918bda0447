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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness.results_summary import read_summaries
from benchmarks.harness.summary_transfer import read_transfer
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.sim import load_profile

from .builder import Page, PageContext, page_sections, template, template_section
from .ladders import DRIFT_LEVELS, interval, ladder_block, ladder_table, read_ladder, read_text, reading


def load(out: Path) -> dict[str, Any]:
    levels = {}
    for level in DRIFT_LEVELS:
        folder = out / level
        if not folder.is_dir():
            continue
        levels[level] = {
            **(read_ladder(folder) or {"ladder": None, "setting": "", "run": {}}),
            "leak": read_text(folder / "leak.md") if (folder / "leak.md").is_file() else None,
            "leak_run": json.loads(read_text(folder / "leak_run.json")) if (folder / "leak.md").is_file() else None,
            "subsets": {
                p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*/ladder.json"))
            },
        }
    if not levels:
        raise SteerEnvsError(f"{out} holds no level folder ({', '.join(DRIFT_LEVELS)})")
    comparisons = read_summaries(out, tuple(f"sim:{level}" for level in DRIFT_LEVELS))
    return {
        "levels": levels,
        "comparisons": {e.removeprefix("sim:"): s for e, s in comparisons.items()},
        "transfer": read_transfer(out),
        "diagnosis": _optional_json(out / "diagnosis" / "diagnosis.json"),
        "hand_written": _optional_json(out / HAND_WRITTEN / "summary.json"),
        "components": _optional_json(out / COMPONENTS / "summary.json"),
        "supervised": _optional_json(out / SUPERVISED / "summary.json"),
        "rl_ngrams": _optional_json(out / RL_NGRAMS / "summary.json"),
        "out": out,
    }


#: the folder of ``out`` that holds the hand-written rung's summary (``python -m studies.drift_tells.run``)
HAND_WRITTEN = "hand_written"
#: the folder of ``out`` that holds the steering trainer's component measurements (``studies.drift_components``)
COMPONENTS = "components"
#: the folder of ``out`` that holds the supervised bound of the steerer's architecture (``studies.drift_supervised``)
SUPERVISED = "supervised"
#: the folder of ``out`` that holds the paper's trainer with the n-gram table frozen (``studies.drift_rl_ngrams``)
RL_NGRAMS = "rl_ngrams"


def _optional_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


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
    if data["ladder"] is None:
        return card + "No headroom ladder is recorded for this level.\n\n" + _leak(data)
    parts = [card, ladder_block(data)]
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
    "--train-seeds 3 --method steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800 --spearman-tasks 10 --no-curves "
    "--own-rate-rows --llm-limit 0 --summaries docs/results/drift --doc runs/drift_main.md\n"
    "steer-envs report results_drift   # rebuilds this page with the level's summary"
)


def ladder_place(ladder: dict[str, Any], gain: float) -> float:
    """A gain over no supervision on the ladder's scale: its best fixed rule's gain is 0, its learnable ceiling's 1."""
    rows = {r["rung"]: r for r in ladder["rows"]}
    g_rule, g_ceiling = rows["best_fixed_rule"]["gain"]["mean"], rows["learnable_ceiling"]["gain"]["mean"]
    return (gain - g_rule) / (g_ceiling - g_rule) if g_ceiling != g_rule else float("nan")


def _weak(ctx: PageContext) -> str:
    """What is weak, with RL steering's place on each level's ladder and its fast path's Spearman with q(s) across
    tasks (mean over training seeds) read from the comparisons."""
    places, spearman = [], []
    for level in DRIFT_LEVELS:
        summary, ladder = ctx.data["comparisons"].get(level), ctx.data["levels"].get(level, {}).get("ladder")
        if summary is None or ladder is None:
            continue
        gain = next(p["mean"] for p in summary["vs_none"] if p["a"] == "steering_rl")
        places.append(f"{ladder_place(ladder, gain):+.2f} on `sim:{level}`")
        across = [s["across"] for s in (summary.get("spearman") or {}).get("seeds", []) if "across" in s]
        if across:
            spearman.append(f"{sum(across) / len(across):.2f} on `sim:{level}`")
    return template(
        "drift_weak", rl_places=", ".join(places) or "not measured", spearman=", ".join(spearman) or "not measured"
    )


def placement_markdown(
    ladder: dict[str, Any], summary: dict[str, Any], hand_written: dict[str, Any] | None = None
) -> str:
    """Each compared row's gain over none placed on the ladder's scale from its best fixed rule (0) to its learnable
    ceiling (1): where a learner lies between what a rule gets and what an observer could get; with the level's
    hand-written rung (``hand_written``: its study record), the rule a person writes from the card, as a row."""
    from benchmarks.harness.tables import display_name

    rows = {r["rung"]: r for r in ladder["rows"]}
    rule, ceiling = rows.get("best_fixed_rule"), rows.get("learnable_ceiling")
    if not rule or not ceiling or "gain" not in rule or "gain" not in ceiling:
        return ""
    lines = [
        "| Row | Gain vs none [95% CI] | Place (ladder's best fixed rule = 0, learnable ceiling = 1) |",
        "|---|---:|---:|",
        f"| ladder: best fixed rule | {interval(rule['gain'])} | 0 |",
        f"| ladder: learnable ceiling | {interval(ceiling['gain'])} | 1 |",
    ]
    if hand_written is not None:
        gain = hand_written["gains"]["hand_written - none"]
        place = ladder_place(ladder, gain["mean"])
        lines.append(
            f"| hand-written rule (the card's tells, on the ladder's tasks) | {interval(gain)} | {place:+.2f} |"
        )
    for pair in summary["vs_none"]:
        if pair["a"] in ("oracle", "random"):
            continue
        lines.append(f"| {display_name(pair['a'])} | {interval(pair)} | {ladder_place(ladder, pair['mean']):+.2f} |")
    return (
        "**Each row's place between the rule and the ceiling.** The comparison's gains over none on the ladder's scale "
        "(each gain on its own tasks: the comparison's first 100 test tasks per benchmark, the ladder's first 150, "
        "the same evaluation seeds; the ladder's rule is not rate-matched, the comparison's rows are):\n\n"
        + "\n".join(lines)
        + "\n\n"
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
    ladder = ctx.data["levels"].get(level, {}).get("ladder")
    hand_written = _hand_written_level(level, ctx)
    return heading + body + "\n" + (placement_markdown(ladder, summary, hand_written) if ladder else "")


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
    parts.append(f"```bash\n{study_command(data['command'])}\n```\n\n")
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


def hand_written_markdown(level: str, data: dict[str, Any], first: bool = True, commits: tuple[str, ...] = ()) -> str:
    """The hand-written rung of one level, from the study's summary: its rows, paired gains and place (``first``:
    with the rule's description, which later levels refer to)."""
    from .results import interval_text

    rows, gains, ladder = data["rows"], data["gains"], data["ladder"]
    spec, over_rule = data["specs"]["best_fixed_rule"], gains["hand_written - best_fixed_rule"]

    def f1(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    lines = [
        "| Row | F1 (this run) | F1 (the ladder) | Notes / task | Gain vs none [95% CI] "
        "| Gain vs the fixed rule [95% CI] |",
        "|---|---:|---:|---:|---:|---:|",
        f"| none | {rows['none']['f1']:.2f} | {f1(ladder['none_f1'])} | 0.00 | | |",
        f"| best fixed rule (`{spec}`) | {rows['best_fixed_rule']['f1']:.2f} | {f1(ladder['best_fixed_rule_f1'])} | "
        f"{rows['best_fixed_rule']['interventions_per_task']:.2f} | {interval_text(gains['best_fixed_rule - none'])} "
        "| |",
        f"| **hand-written rule** | {rows['hand_written']['f1']:.2f} | | "
        f"{rows['hand_written']['interventions_per_task']:.2f} | {interval_text(gains['hand_written - none'])} | "
        f"{interval_text(over_rule)} ({over_rule['verdict']}) |",
    ]
    ceiling, place = ladder["ceiling_over_rule"], data["place"]
    closing = (
        f"The ladder's learnable ceiling is {ceiling:+.2f} F1 over the fixed rule; the hand-written rule's place on "
        f"that scale is **{place:.2f}**.\n\n"
        if ceiling is not None and place is not None
        else ""
    )
    episodes = rows["none"]["episodes"]
    cfg = data["config"]
    setting = (
        f"*Setting:* `{cfg['executor']}`, split **{cfg['split']}**, the first {cfg['limit']} tasks per benchmark "
        f"({len(cfg['benchmarks'])} benchmarks; task list `{cfg['task_ids_sha']}`) x {cfg['seeds']} seeds, "
        f"{cfg['max_turns']} turns, metric {cfg['metric']}; protocol hash `{cfg['hash']}`"
        + "".join(f"; commit `{c}`" for c in commits)
        + ".\n\n"
    )
    return (
        f"### The hand-written rung on `sim:{level}`\n\n"
        + (
            template("drift_hand_written") + "\n"
            if first
            else "The same rule as on the first level, read the same way. "
        )
        + f"{episodes:,} paired test episodes a row.\n\n"
        + setting
        + "\n".join(lines)
        + "\n\n"
        + closing
    )


def _hand_written_level(level: str, ctx: PageContext) -> dict[str, Any] | None:
    """The hand-written rung's record of one level (None when the study has not measured it)."""
    return ((ctx.data["hand_written"] or {}).get("levels") or {}).get(f"sim:{level}")


def _hand_written(level: str, ctx: PageContext) -> str:
    data, level_data = ctx.data["hand_written"], _hand_written_level(level, ctx)
    if not level_data:
        return ""

    first = next(iter(data["levels"])) == f"sim:{level}"
    commits = tuple(data.get("code", {}).get("commits", ()))
    return (
        hand_written_markdown(level, level_data, first, commits) + f"```bash\n{study_command(data['command'])}\n```\n\n"
    )


def study_command(command: str) -> str:
    """A study's recorded command as a reader reruns it: its run folder kept (a study needs one), the summary's
    folder dropped (the study's default is where the committed summary lives)."""
    import shlex

    words, kept = shlex.split(command), []
    it = iter(words)
    for word in it:
        if word == "--summary":
            next(it, None)
            continue
        kept.append(word)
    return shlex.join(kept)


#: how the component tables name a probe's input
PROBE_INPUTS = {
    "statistics": "the steerer's statistics (its input)",
    "untrained_state": "the encoder state, untrained",
    "trained_state": "the encoder state, trained",
}


def components_markdown(data: dict[str, Any]) -> str:
    """The steering trainer's parts on a level's dev states: what a linear probe reads of the hidden kind from each
    representation, the fast path's AUC for a drift under way, and the slow path's choice of note per kind."""

    def cell(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    targets = [*data["kinds"], "any_drift"]
    counts = {**data["kinds"], "any_drift": sum(data["kinds"].values())}
    probe = [
        "| Probe input | " + " | ".join(f"{t} ({counts[t]:,})" for t in targets) + " |",
        "|---|" + "---:|" * len(targets),
    ]
    for name, aucs in data["probe_auc"].items():
        probe.append(f"| {PROBE_INPUTS.get(name, name)} | " + " | ".join(cell(aucs[t]) for t in targets) + " |")
    slow = ["| Kind under way | States | The slow path's most probable note fits | Its most chosen note |"]
    slow.append("|---|---:|---:|---|")
    for kind, rec in data["slow_path"].items():
        slow.append(f"| {kind} | {rec['states']:,} | {cell(rec['fits'])} | {rec['most_chosen'] or '—'} |")
    fast, z = data["fast_path_auc"], data["fast_path_mean_z"]
    return (
        f"### Where the paper's trainer loses the margin on `{data['executor']}` (its parts, on dev)\n\n"
        + template(
            "drift_components", states=f"{data['states']:,}", episodes=f"{data['episodes']:,}", spec=data["rl_spec"]
        )
        + f"\n*Setting:* `{data['executor']}`, split **dev**, {data['episodes']:,} episodes without supervision"
        + "".join(f"; commit `{c}`" for c in data.get("code", {}).get("commits", ()))
        + ".\n"
        + "\nROC AUC of a linear probe (logistic regression, 5 folds by episode), per kind against the rest and for "
        "any drift (states of each in brackets):\n\n"
        + "\n".join(probe)
        + "\n\nThe fast path's `z` tells states with a drift under way from the others with ROC AUC "
        f"{cell(fast['trained'])} trained ({cell(fast['untrained'])} untrained; 0.5 is chance, below it the drifting "
        f"states rank lower); its mean `z` there is {cell(z['trained_drifting'])}, elsewhere "
        f"{cell(z['trained_not'])}.\n\n"
        + "\n".join(slow)
        + f"\n\n(A choice at random among the {data['notes_in_catalogue']} notes fits 1 time in "
        f"{data['notes_in_catalogue']}.)\n\n"
        + _training_signal(data.get("training"))
        + f"```bash\n{study_command(data['command'])}\n```\n\n"
    )


def _training_signal(signal: dict[str, Any] | None) -> str:
    """What the trainer's budget bought, from its log (a sentence; nothing for a summary without it)."""
    if not signal:
        return ""
    return (
        f"**The training signal** (the trainer's log): {signal['rounds']} rounds labelled "
        f"{signal['states_labelled']:,} states with q(s) in {signal['rollouts']:,} rollouts; {signal['grpo_states']:,} "
        "of them "
        f"({signal['grpo_share']:.0%}) gave GRPO a learning signal (their slow-path samples did not all score "
        f"alike), and {signal['zero_advantage_share']:.0%} of the samples' advantages were zero; the fast path's "
        f"ranking loss saw {signal['rank_pairs']:,} pairs. Mean q(s) of the labelled states: "
        f"{signal['mean_q']:+.3f} ({signal['mean_q_last_5']:+.3f} in the last 5 rounds).\n\n"
    )


def study_section(key: str, render: Callable[[dict[str, Any]], str]) -> Callable[[str, PageContext], str]:
    """A level's section from one study's summary (``ctx.data[key]``): ``render`` of it on the level it measured,
    nothing on the others or when it is not committed."""

    def section(level: str, ctx: PageContext) -> str:
        data = ctx.data[key]
        return render(data) if data and data["executor"] == f"sim:{level}" else ""

    return section


#: the rows every study on a ladder's test tasks evaluates beside its own, as its tables name them
LADDER_ROWS = {
    "none": "no supervision",
    "best_fixed_rule": "the ladder's best fixed rule",
    "hand_written": "hand-written rule (the card's tells)",
}
#: how the supervised bound's tables name its rows and fits
SUPERVISED_ROWS = {
    **LADDER_ROWS,
    "supervised": "the steerer's architecture, every weight fitted",
    "supervised_frozen_ngrams": "the same, n-gram table at its initialisation",
}


def ngram_table() -> str:
    """The encoder steerer's n-gram table as its defaults size it (the supervised fits differ in whether it trains)."""
    import inspect

    from agents.steering.encoder import EncoderSteerer

    defaults = inspect.signature(EncoderSteerer.__init__).parameters
    return f"{defaults['hash_dim'].default:,} × {defaults['embed_dim'].default} weights, the largest block"


def ladder_rows_table(data: dict[str, Any], names: dict[str, str]) -> list[str]:
    """A study's test rows (``names``: row -> how the table names it) with each one's gain over the ladder's best
    fixed rule and its place on the ladder's scale (that gain over the ceiling's, ``data["ceiling_over_rule"]``)."""
    from .results import interval_text

    rows, gains, ceiling = data["rows"], data["gains"], data["ceiling_over_rule"]
    table = ["| Row | F1 | Notes / task | Gain vs the ladder's rule [95% CI] | Place (rule 0, ceiling 1) |"]
    table.append("|---|---:|---:|---:|---:|")
    for name in (n for n in names if n in rows):
        over = gains.get(f"{name} - best_fixed_rule")
        place = 0.0 if name == "best_fixed_rule" else over["mean"] / ceiling if over and ceiling else None
        table.append(
            f"| {names[name]} | {rows[name]['f1']:.2f} | {rows[name]['interventions_per_task']:.2f} | "
            f"{interval_text(over) if over else '—'} | {'—' if place is None else f'{place:+.2f}'} |"
        )
    return table


def supervised_markdown(data: dict[str, Any]) -> str:
    """The supervised bound: each fit's test row beside the ladder's rule and the hand-written rung, its place on the
    ladder's scale, and its fast and slow paths on the component study's dev states beside the RL steerer's."""
    from .results import interval_text

    rows, gains, fits, comp = data["rows"], data["gains"], data["fits"], data["components"]
    names = [n for n in SUPERVISED_ROWS if n in rows and n.startswith("supervised")]
    table = ladder_rows_table(data, SUPERVISED_ROWS)
    pairs = (("supervised_frozen_ngrams", "supervised"), *((n, "hand_written") for n in names))
    paired = [
        f"* {SUPERVISED_ROWS[a]} − {SUPERVISED_ROWS[b]}: {interval_text(gains[f'{a} - {b}'])}"
        for a, b in pairs
        if f"{a} - {b}" in gains
    ]

    def cell(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    kinds = list(comp["rl"]["slow_path_fits"])
    parts = ["| Steerer | `z` AUC, drift under way | " + " | ".join(f"slow path fits `{k}`" for k in kinds) + " |"]
    parts.append("|---|---:|" + "---:|" * len(kinds))
    rl = comp["rl"]
    parts.append(
        f"| RL (the paper's trainer) | {cell(rl['fast_path_auc'])} | "
        + " | ".join(cell(rl["slow_path_fits"][k]) for k in kinds)
        + " |"
    )
    for name in names:
        parts.append(
            f"| {SUPERVISED_ROWS[name]} | {cell(comp[name]['fast_path_auc_mean'])} | "
            + " | ".join(cell(comp[name]["slow_path_fits"][k]) for k in kinds)
            + " |"
        )
    chosen = "; ".join(
        f"{SUPERVISED_ROWS[f['fit']]}, seed {f['seed']}: learning rate {f['lr']:g}, epoch {f['epoch']}, threshold "
        f"{f['threshold']['chosen']['threshold']:.3f} (dev {f['threshold']['chosen']['interventions']:.2f} notes/task)"
        for f in fits
    )
    setting, config = data["setting"], data["config"]
    return (
        f"### The supervised bound on `{data['executor']}`\n\n"
        + template(
            "drift_supervised",
            decisions=f"{data['train_decisions']:,}",
            ladder_decisions=f"{data['ladder_train_decisions']:,}",
            forks=str(setting["train_forks"]),
            table_share=ngram_table(),
            seeds=str(setting["train_seeds"]),
        )
        + f"\n*Setting:* `{data['executor']}`, split **test**, {config['limit']} tasks per benchmark × "
        f"{config['seeds']} seeds (the ladder's; {rows['none']['episodes']:,} paired episodes a run); the ladder's "
        f"ceiling − its rule {data['ceiling_over_rule']:+.2f} (a point estimate)"
        + "".join(f"; commit `{c}`" for c in data.get("code", {}).get("commits", ()))
        + ".\n\n"
        + "\n".join(table)
        + "\n\n"
        + "\n".join(paired)
        + "\n\nThe fits' parts on the component study's dev states (mean over the training seeds), beside the RL "
        f"steerer's ({comp['states']:,} states):\n\n"
        + "\n".join(parts)
        + f"\n\nChosen on held-out train episodes (learning rate, epoch) and on dev (threshold): {chosen}.\n\n"
        + f"```bash\n{study_command(data['command'])}\n```\n\n"
    )


#: how the RL n-gram study's tables name its rows
RL_NGRAM_ROWS = {
    **LADDER_ROWS,
    "rl_paper": "RL steering, the paper's setting",
    "rl_frozen_ngrams": "RL steering, n-gram table frozen",
}


def rl_ngrams_markdown(data: dict[str, Any]) -> str:
    """The paper's trainer with and without the n-gram table trained: the dev choice, each row's test F1, gain over
    the ladder's rule and place on the ladder's scale, and the paired difference of the two trainers."""
    from .results import interval_text

    rows, gains, choice = data["rows"], data["gains"], data["choice"]
    ceiling = data["ceiling_over_rule"]
    table = ladder_rows_table(data, RL_NGRAM_ROWS)
    dev = data["dev"]
    taus = "; ".join(
        f"{RL_NGRAM_ROWS[row]}: " + ", ".join(f"tau={run['value']} (dev rate {run['rate']:.2f})" for run in runs)
        for row, runs in dev["runs"].items()
    )
    reused = any(run.get("checkpoint") for runs in dev["runs"].values() for run in runs)
    return (
        f"### The paper's trainer with the n-gram table frozen, on `{data['executor']}`\n\n"
        + template(
            "drift_rl_ngrams",
            budget=data["budget"],
            seeds=str(len(next(iter(dev["runs"].values())))),
            dev_limit=str(dev["config"]["limit"]),
            rule=choice["rule"],
        )
        + f"\n*Setting:* `{data['executor']}`, split **test**, {data['config']['limit']} tasks per benchmark × "
        f"{data['config']['seeds']} seeds (the ladder's; {rows['none']['episodes']:,} paired episodes a run); the "
        f"ladder's ceiling − its rule {ceiling:+.2f} (a point estimate)"
        + "".join(f"; commit `{c}`" for c in data.get("code", {}).get("commits", ()))
        + ".\n\n"
        + f"**Dev choice:** {RL_NGRAM_ROWS[choice['chosen']]} (frozen − the paper's setting on dev "
        f"{interval_text(choice['dev_gain'])}, {choice['dev_gain']['verdict']}). Operating points: {taus}.\n\n"
        + "\n".join(table)
        + "\n\n"
        + "On test: "
        + "; ".join(
            f"{RL_NGRAM_ROWS[a]} − {RL_NGRAM_ROWS[b]} {interval_text(gains[f'{a} - {b}'])} "
            f"({gains[f'{a} - {b}']['verdict']})"
            for a, b in (
                ("rl_frozen_ngrams", "rl_paper"),
                ("rl_frozen_ngrams", "hand_written"),
                ("rl_paper", "hand_written"),
            )
        )
        + "."
        + (
            " The paper's setting's steerers are the `sim:drift1` comparison's (the same training: the same label "
            "and config fingerprint, copied by `--paper-checkpoints`)."
            if reused
            else ""
        )
        + f"\n\n```bash\n{study_command(data['command'])}\n```\n\n"
    )


#: the studies' sections of a level, in page order (the trainer's parts, the supervised bound, the frozen-table RL)
STUDY_SECTIONS = (
    study_section("components", components_markdown),
    study_section("supervised", supervised_markdown),
    study_section("rl_ngrams", rl_ngrams_markdown),
)


def _levels(ctx: PageContext) -> str:
    levels = ctx.data["levels"].items()
    return "".join(
        _level(level, data)
        + _hand_written(level, ctx)
        + _algorithms(level, ctx)
        + "".join(section(level, ctx) for section in STUDY_SECTIONS)
        + _diagnosis(level, ctx)
        for level, data in levels
    )


PAGE = Page(
    name="results_drift",
    help="the synthetic drift family's headroom ladders (sim:drift1..3)",
    doc="docs/results_drift.md",
    out="docs/results/drift",
    load=load,
    sections=page_sections(template_section("intro", "drift_intro"), _levels, _transfer, _weak),
)

__all__ = ["PAGE", "load"]
