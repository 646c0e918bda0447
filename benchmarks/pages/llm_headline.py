"""``docs/results_llm_headline.md``: a zero-shot LLM steerer against the same LLM trained by the steering trainer.

The runs are made by ``python -m benchmarks.llm_headline --out OUT`` (resumable), which writes its measured numbers
to ``OUT/llm_headline.json`` (rows, the harness's paired intervals, setting card, wall times, the parts not run yet);
this page renders that file. ``steer-envs report results_llm_headline`` rebuilds it from the compact copy kept in the
repository (``docs/data/llm_headline/``), ``--out OUT`` from a run folder.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from .builder import Page, Section, read_run_json, template
from .tables import markdown_table

REPORT_FILE = "llm_headline.json"
#: the compact summary kept in the repository, so the page rebuilds without the run folder
REPO_SUMMARY = "docs/data/llm_headline"


def load(out: Path) -> dict[str, Any]:
    return {"report": read_run_json(out / REPORT_FILE, f"python -m benchmarks.llm_headline --out {out}")}


def _ci(d: dict[str, float] | None) -> str:
    return "–" if d is None else f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def _dev(row: dict[str, Any]) -> str:
    dev = row.get("dev")
    if not dev:
        return "–"
    probes = ", ".join(f"{p['value']}→{p['rate']:.2f}" for p in dev["probes"])
    return f"{dev['knob']}={dev['value']} (dev {dev['dev_rate']:.2f}/task; probes {probes})"


def status_section(report: dict[str, Any]) -> str:
    if report.get("complete"):
        return ""
    return (
        "> **Partial.** Parts not finished when this page was written: "
        + "; ".join(report.get("pending", []))
        + ". The rows below are the ones whose test episodes are complete.\n\n"
    )


def table_section(report: dict[str, Any]) -> str:
    rows = [
        (
            row["name"],
            f"{row['f1']:.2f}",
            _ci(row.get("gain")),
            f"{row['interventions']:.2f}",
            f"{row['decisions']:.2f}",
            f"{row['agent_turns']:.2f}",
            f"{row['episodes']}" + (f" ({row['failed']} failed)" if row["failed"] else ""),
            _dev(row),
        )
        for row in report["rows"].values()
    ]
    table = markdown_table(
        [
            "row",
            "F1 (macro)",
            "ΔF1 vs none [95%]",
            "interventions / task",
            "decisions / task",
            "executor turns / task",
            "episodes",
            "operating point (chosen on dev)",
        ],
        rows,
        spaced=True,
    )
    comparisons = "".join(
        f"\n**{name}**: ΔF1 {_ci(d)} (paired, same tasks and seeds).\n"
        for name, d in report.get("comparisons", {}).items()
    )
    return "## Table\n\n" + table + comparisons + "\n"


def decisions_section(report: dict[str, Any]) -> str:
    """The served steerers' decision logs on test: the fast path's z and what the slow path wrote."""
    rows = []
    for row in report["rows"].values():
        log = row.get("decision_log")
        if not log:
            continue
        names = ", ".join(f"{n} {c}" for n, c in log["names"].items()) or "none"
        z = "–" if log["z_mean"] is None else f"{log['z_mean']:.2f} [{log['z_min']:.2f}, {log['z_max']:.2f}]"
        rows.append((row["name"], log["fast"], z, log["slow"], log["parsed"], log["named_intervention"], names))
    if not rows:
        return ""
    logs = [row["decision_log"] for row in report["rows"].values() if row.get("decision_log")]
    finding = ""
    if all(log["named_intervention"] == 0 for log in logs):
        outputs, parsed = sum(log["slow"] for log in logs), sum(log["parsed"] for log in logs)
        finding = (
            f"\nNo slow-path output of the served steerers named an intervention ({outputs} outputs, "
            f"{parsed} parsable): the model does not write the "
            "`Intervention: NAME` line, so every decision the gate opened became a pass, τ cannot move the "
            "rate (see the dev probes), and the LLM rows equal no supervision by construction. The trained "
            "adapter cannot change that here: the trainer's causal-LM steerer *chooses* among the names (it "
            "scores each name after the reasoning, so it never fails to parse), while the served path parses "
            "the line the model generates.\n"
        )
    return (
        "**What the served steerers did on test** (their decision logs, `decisions.jsonl`): fast-path scores, "
        "z = log P(yes) − log P(no) (mean [min, max]); slow-path outputs, how many held a parsable "
        "`Intervention: NAME` line, and how many named an intervention (the rest are passes).\n\n"
        + markdown_table(
            ["row", "fast scores", "z", "slow outputs", "parsed", "named an intervention", "names"], rows, spaced=True
        )
        + finding
        + "\n"
    )


def dev_section(report: dict[str, Any]) -> str:
    """Every served steerer probed on dev, with how its slow path read NAME: the probes behind the operating points,
    and the runs of the slow path that parses the generated line (when one was probed)."""
    rows = []
    for entry in report.get("dev_steerers", {}).values():
        served = entry["served"].removeprefix("openai:").split("@", 1)[0]
        probes = ", ".join(f"τ={p['tau']}: {p['interventions']:.2f} ({p['episodes']} ep.)" for p in entry["probes"])
        log = entry.get("decision_log") or {}
        rows.append(
            (
                f"`{served}`",
                entry["name_choice"],
                probes,
                log.get("slow", "–"),
                log.get("parsed", "–"),
                log.get("named_intervention", "–"),
            )
        )
    if not rows:
        return ""
    return (
        "**Every served steerer probed on dev** (name choice: `choice` = the server chooses among the names, "
        "`parse` = the generated line is parsed; probes: interventions per task and episodes; the slow-path "
        "counts are the decision log's, every probe together, interrupted episodes included).\n\n"
        + markdown_table(
            ["served model", "name choice", "dev probes", "slow outputs", "parsed", "named an intervention"],
            rows,
            spaced=True,
        )
        + "\n"
    )


def card_section(report: dict[str, Any]) -> str:
    card = report["card"]
    tasks = ", ".join(f"{b} {n}" for b, n in card["tasks"].items())
    train = card["train"]
    lines = [
        f"* model: `{card['model']}`; served by {card['served_by']} (`{card['vllm']}`), "
        f"max_model_len {card['max_model_len']}, device `{card['device']}`, "
        f"{card['episodes_in_flight']} episodes in flight",
        f"* served through vLLM: {'; '.join(card['served_rows'])} (the same served-steerer path, "
        f"`steering_zero_shot:model=openai:NAME@URL`; NAME `base` or the adapter `steerer`)",
        f"* executor `{card['executor']}` (hash `{card['executor_hash']}`), max {card['max_turns']} turns; corpus "
        f"`{card['corpus']}` sha256 `{card['corpus_sha']}`; retriever {card['retriever']}, k={card['topk']}",
        f"* test: split **{card['split']}**, {sum(card['tasks'].values())} tasks ({tasks}), {card['seeds']} evaluation "
        f"seed(s) per task, the same tasks and seeds for every row",
        f"* dev matching: {card['dev_tasks_per_benchmark']} dev task(s) per benchmark x {card['dev_seeds']} seed(s); "
        f"τ bisected on logit(τ) to {card['target_interventions_per_task']:g} intervention(s) per task "
        f"(stop within ±{card['dev_tolerance']:g})",
        f'* training (train split, the suite\'s steering trainer: ranking loss + GRPO, `backbone = "causal_lm"`, LoRA '
        f"rank {train['lora_rank']}): m={train['m']} rounds, k={train['k']} states per round, G={train['G']}, "
        f"N={train['N']}, {train['bank_tasks']} bank tasks x {train['bank_rollouts']} rollout(s), "
        f"{train.get('update_epochs', 4)} update epoch(s) per round, lr {train['lr']:g}, "
        f"seed {train['seed']}; one training seed",
        prompts_line(card),
        f"* commit(s): {', '.join(f'`{c}`' for c in card['commits']) or 'none recorded'}",
    ]
    return "## Setting card\n\n" + "\n".join(lines) + "\n\n"


def prompts_line(card: dict[str, Any]) -> str:
    """How the steerers' prompts were fitted, as the run recorded it: in the served model's tokens (the served rows
    read the ids the trained steerer was trained on), or, in runs that recorded no ``served_fit``, by characters."""
    if card.get("served_fit") == "tokens":
        return (
            f"* steerer prompts: at most {card['prompt_tokens']} tokens, fitted in the model's tokens (served rows: "
            f"the server's tokenizer, z from the forced yes/no tokens; training: the same budget); reasoning up to "
            f"{card['think_tokens']} tokens"
        )
    return (
        f"* steerer prompts: at most {card['prompt_chars']} characters (served; z read from the server's top-20 "
        f"log-probs) / {max(64, card['prompt_chars'] // 3)} tokens (training); reasoning up to "
        f"{card['think_tokens']} tokens"
    )


def timings_section(report: dict[str, Any]) -> str:
    rows = [
        (
            part,
            f"{t['seconds'] / 60:.2f}",
            t.get("invocations", 1),
            ", ".join(f"{k} {v}" for k, v in t.items() if k not in ("seconds", "invocations")),
        )
        for part, t in report["timings"].items()
    ]
    total = sum(t["seconds"] for t in report["timings"].values())
    return (
        "## Wall time\n\n"
        + markdown_table(["part", "minutes", "invocations", "notes"], rows, spaced=True)
        + f"\nIn all {total / 60:.1f} min of parts (a 2-core CPU machine).\n\n"
    )


def _quote(text: str) -> str:
    """``text`` as a markdown block quote wrapped at the pages' width."""
    lines = textwrap.wrap(text, width=116, break_long_words=False, break_on_hyphens=False)
    return "".join(f"> {line}\n" for line in lines)


def box(report: dict[str, Any]) -> str:
    """What the page shows and what it does not, from the run's own setting card (the model, the tasks, the
    training budget), so a run at another scale gets its own."""
    card, train = report["card"], report["card"]["train"]
    tasks, seeds, target = sum(card["tasks"].values()), card["seeds"], card["target_interventions_per_task"]
    simulated = card["executor"].startswith("sim:")
    shows = (
        f"**What this page shows.** `{card['model']}` as a zero-shot steerer against the same model trained by the "
        f"suite's steering trainer (a LoRA adapter, one training seed), both served by vLLM and gated to about "
        f"{target:g} intervention{'' if target == 1 else 's'} per task with τ chosen on dev, and no "
        f"supervision, on the same {tasks} {card['split']} tasks x {seeds} "
        f"evaluation seed{'' if seeds == 1 else 's'} of the {'simulated ' if simulated else ''}executor "
        f"`{card['executor']}`: paired "
        "intervals, and what the served steerers decided."
    )
    limits = (
        "**What it does not show.** Whether the paper's gains reproduce: "
        + ("the executor is simulated, not an LLM; " if simulated else "")
        + f"the trainer ran {train['m']} rounds of {train['k']} states; and at {tasks} test tasks "
        "a difference inside the intervals is no difference."
    )
    return _quote(shows) + ">\n" + _quote(limits) + "\n"


def intro(report: dict[str, Any]) -> str:
    return template("llm_headline_intro", box=box(report))


def reading_section(report: dict[str, Any]) -> str:
    return template("llm_headline_reading")


SECTIONS = (
    status_section,
    table_section,
    decisions_section,
    dev_section,
    card_section,
    timings_section,
    reading_section,
)


def render_report(report: dict[str, Any]) -> str:
    return intro(report) + "".join(section(report) for section in SECTIONS)


PAGE = Page(
    name="results_llm_headline",
    help="zero-shot LLM steerer vs the same LLM trained by the steering trainer (vLLM)",
    doc="docs/results_llm_headline.md",
    out=REPO_SUMMARY,
    load=load,
    sections=(
        Section("intro", lambda ctx: intro(ctx.data["report"])),
        *(Section(f.__name__.removesuffix("_section"), lambda ctx, f=f: f(ctx.data["report"])) for f in SECTIONS),
    ),
)
