"""``docs/results.md``: the rate-matched comparison on each executor profile and the zero-shot LLM steerer.

The runs are made by ``python -m benchmarks.harness.results_doc`` (resumable); this page reads them back: the
generator's options from ``OUT/results_page.json``, each profile's numbers from ``OUT/<profile>/comparison.json``
and the LLM section's from ``OUT/llm/llm_section.json``. ``steer-envs report results --out OUT`` rebuilds it.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from steer_envs.errors import SteerEnvsError

from benchmarks.harness.comparison import RL, ComparisonPlan, render_comparison, summary_from_dict
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.setting import SettingCard
from benchmarks.harness.stats import Interval, MethodSummary
from benchmarks.harness.sweeps import executor_dirname
from benchmarks.harness.tables import comparison_table, display_name, pairwise_table

from .builder import Page, PageContext, Section, read_run_json, template
from .provenance import code_version, folder_list, machine_line, today

PAGE_FILE = "results_page.json"
LLM_FILE = "llm_section.json"
LLM = "steering_llm_zero_shot"
#: the acceptance setting; anything smaller makes the page say it is a dry run
FULL = {"limit": 0, "seeds": 3, "train_seeds": 3, "min_llm_limit": 20}


def is_dry_run(args: Any) -> bool:
    """Fewer evaluation or training seeds than the acceptance setting, another split, or too few LLM tasks: the
    numbers only exercise the pipeline. A task subset at full seeds is a result on that subset (see is_subset)."""
    return (args.seeds < FULL["seeds"] or args.train_seeds < FULL["train_seeds"] or args.split != "test"
            or 0 < args.llm_limit < FULL["min_llm_limit"])


def is_subset(args: Any) -> bool:
    return args.limit != FULL["limit"]


def card_from_dict(d: dict) -> SettingCard:
    return SettingCard(**{**d, "commits": tuple(d["commits"])})


def load(out: Path) -> dict[str, Any]:
    page = read_run_json(out / PAGE_FILE, f"python -m benchmarks.harness.results_doc --out {out}")
    comparisons = {}
    for executor in page["profiles"]:
        cmp_path = out / executor_dirname(executor) / "comparison.json"
        if not cmp_path.is_file():
            raise SteerEnvsError(f"{cmp_path} is missing; rerun the generator to finish profile {executor}")
        comparisons[executor] = json.loads(cmp_path.read_text(encoding="utf-8"))
    llm_path = out / "llm" / LLM_FILE
    llm = json.loads(llm_path.read_text(encoding="utf-8")) if page["options"]["llm_limit"] and llm_path.is_file() else None
    return {"page": page, "args": SimpleNamespace(**page["options"]), "comparisons": comparisons, "llm": llm}


# -- sections ----------------------------------------------------------------------------------------------------
def _header(ctx: PageContext) -> str:
    args = ctx.data["args"]
    text = "# Results\n\n"
    if is_dry_run(args):
        text += template("results_dry_run")
    elif is_subset(args):
        text += template("results_subset", limit=args.limit)
    return text


def _intro(ctx: PageContext) -> str:
    args = ctx.data["args"]
    return (template("results_generated", command=ctx.data["page"]["command"], date=today(), code=code_version(),
                     machine=machine_line(), out=args.out)
            + template("results_protocol", target=f"{args.target:g}", train_seeds=args.train_seeds)
            + template("results_links", rl=args.rl))


def comparison_markdown(data: dict[str, Any]) -> str:
    """A comparison's markdown rendered back from its ``comparison.json`` (the same renderer ``compare`` uses)."""
    plan = ComparisonPlan(**{k: v for k, v in data["plan"].items() if k in ComparisonPlan.__dataclass_fields__})
    benchmarks = RunFolder(data["folders"]["report"]).config.benchmarks
    summaries = [summary_from_dict(s) for s in data["summaries"]]
    pairs = {(p["a"], p["b"]): Interval(p["mean"], p["low"], p["high"]) for p in data["pairwise"]}
    budgets = {name: row["budget"] for name, row in data["rows"].items() if row.get("budget") is not None}
    knobs = {name: row["knob"] for name, row in data["rows"].items()}
    curves = data.get("curves") or {}
    plot = "plots/rate_curves.png" if curves and (Path(plan.out) / "plots" / "rate_curves.png").is_file() else None
    return render_comparison(plan, benchmarks, summaries, pairs, budgets, knobs, card_from_dict(data["card"]), curves,
                             data.get("spearman") or {}, plot)


def copy_plot(out: Path, executor: str, doc: Path, text: str) -> str:
    """Copy a comparison's rate-curve plot next to the page and point its markdown link there."""
    src = out / "plots" / "rate_curves.png"
    if not src.is_file():
        return text
    target = doc.parent / "results" / f"rate_curves_{executor_dirname(executor)}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target)
    return text.replace("](plots/rate_curves.png)", f"](results/{target.name})")


def _profiles(ctx: PageContext) -> str:
    parts = []
    for executor, data in ctx.data["comparisons"].items():
        text = comparison_markdown(data)
        parts += [copy_plot(Path(data["plan"]["out"]), executor, ctx.doc, text), "\n"]
    return "".join(parts)


def llm_verdict(summaries: list[MethodSummary], pairs: dict[tuple[str, str], Interval]) -> str:
    llm = next(s for s in summaries if s.method == LLM)
    text = (f"**Verdict:** the zero-shot LLM steerer changes F1 by {llm.avg_gain.mean:+.2f} "
            f"[{llm.avg_gain.low:+.2f}, {llm.avg_gain.high:+.2f}] over no supervision at "
            f"{llm.interventions_per_task:.2f} interventions/task")
    if (LLM, RL) in pairs:
        gap = pairs[(LLM, RL)]
        text += (f"; against {display_name(RL)} on the same tasks: {gap.mean:+.2f} [{gap.low:+.2f}, {gap.high:+.2f}]")
    return text + ".\n"


def llm_markdown(data: dict[str, Any]) -> str:
    """The zero-shot LLM section from ``llm_section.json``."""
    summaries = [summary_from_dict(s) for s in data["summaries"]]
    pairs = {(p["a"], p["b"]): Interval(p["mean"], p["low"], p["high"]) for p in data["pairwise"]}
    return "".join([
        f"## Zero-shot steering with a prompted LLM ({data['model']})\n\n", card_from_dict(data["card"]).markdown(), "\n",
        template("results_llm", gemma_note=template("results_gemma_note"), llm_limit=data["llm_limit"],
                 llm_dev_limit=data["llm_dev_limit"]),
        comparison_table(summaries, data["benchmarks"], {}, data["knobs"]), "\n",
        pairwise_table([(a, b, i) for (a, b), i in pairs.items()]), "\n",
        llm_verdict(summaries, pairs)])


def llm_data(model: str, llm_limit: int, llm_dev_limit: int, card: SettingCard, summaries: list[MethodSummary],
             pairs: dict[tuple[str, str], Interval], knobs: dict[str, str], benchmarks) -> dict[str, Any]:
    """What ``llm_section.json`` holds (written by the generator, read by :func:`llm_markdown`)."""
    from benchmarks.harness.comparison import _summary_dict

    return {"model": model, "llm_limit": llm_limit, "llm_dev_limit": llm_dev_limit, "card": asdict(card),
            "summaries": [_summary_dict(s) for s in summaries],
            "pairwise": [{"a": a, "b": b, **asdict(i)} for (a, b), i in pairs.items()], "knobs": knobs,
            "benchmarks": list(benchmarks)}


def _llm(ctx: PageContext) -> str:
    return llm_markdown(ctx.data["llm"]) + "\n" if ctx.data["llm"] else ""


def _folders(ctx: PageContext) -> str:
    return "\n## Run folders (split evaluated, code version)\n\n" + folder_list(ctx.data["page"]["folders"])


PAGE = Page(
    name="results", help="the rate-matched comparison on each profile and the zero-shot LLM steerer",
    doc="docs/results.md", out="runs/results", load=load,
    sections=(Section("header", _header), Section("intro", _intro), Section("profiles", _profiles),
              Section("llm", _llm), Section("folders", _folders),
              Section("executors", lambda ctx: template("results_executors"))),
)
