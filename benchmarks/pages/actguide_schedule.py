"""``docs/results_actguide_schedule.md``: ACTGUIDE-RL with guidance for a share of the budget against zero RL, per
region of the base policy, unguided evaluation (issue 22).

The runs are made by ``python -m benchmarks.harness.actguide_schedule_doc --out OUT`` (resumable), which shares the
regions pipeline's folder and records its plan, choices and commands in ``OUT/schedule_page.json``; everything
measured is read back here from the run folders. ``steer-envs report results_actguide_schedule --out OUT`` rebuilds
the page without running anything.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.actguide_regions import (
    REGION_LABEL, REGION_ORDER, benchmark_lines, budget_lines, budget_row, episode_folder, fmt_gain, pass_at_k,
    region_gain, region_table, training_log,
)

from .actguide_regions import STEP2_METHODS, _acceptance, _card, _commands, _effect_table, _success, cell_name, read_records
from .builder import Page, PageContext, Section, read_run_json, template

PAGE_FILE = "schedule_page.json"
GENERATOR = "python -m benchmarks.harness.actguide_schedule_doc"
#: shares of the budget with guidance (``guidance_until``) tried on dev, besides 1 (guidance throughout)
SHARES = (0.25, 0.5, 0.75)
#: the step 2 cells (update_epochs, lr) the regions page's dev grid chose (docs/results_actguide_regions.md), used when
#: the run folder holds no ``step2/choices.json`` of its own
STEP2_CHOICE = {"zero_rl": (4, 0.01), "actguide": (8, 0.01)}


def share_folder(out: Path, share: float) -> Path:
    return out / "step3" / "grid" / f"actguide_until{share:g}"


def load(out: Path) -> dict[str, Any]:
    from agents.actguide.regions import read_regions

    record = read_run_json(out / PAGE_FILE, f"{GENERATOR} --out {out}")
    plan = record["plan"]
    regions_plan = plan["regions"]
    seeds, grid_seeds, rollouts = regions_plan["seeds"], regions_plan["grid_seeds"], regions_plan["rollouts"]
    regions = {split: read_regions(out / f"regions_{split}" / "regions.json") for split in ("test", "dev", "train")}
    groups = {split: {name: {t for t, g in r.items() if g == name} for name in REGION_ORDER}
              for split, r in regions.items()}

    def episodes(folder: Path, label: str, split: str, n_seeds: int) -> list:
        return read_records(folder / episode_folder(split) / f"{label}.jsonl", set(regions[split]), n_seeds, rollouts)

    choices = record["step2_choices"]
    zero, act = STEP2_METHODS[0], STEP2_METHODS[1]
    cells = {m.name: out / "step2" / "grid" / cell_name(m.name, *choices[m.name]) for m in (zero, act)}
    candidates = {1.0: cells[act.name], **{share: share_folder(out, share) for share in plan["shares"]}}
    share = record["share"]
    runs = lambda folder, variant, n: [folder / "runs" / variant / f"seed{s}" for s in range(n)]  # noqa: E731
    data: dict[str, Any] = {
        "record": record, "plan": regions_plan, "schedule": plan, "regions": regions, "groups": groups,
        "out": str(Path(regions_plan["out"]).resolve()), "choice": json.loads((out / "step3" / "choice.json").read_text()),
        "base": {"test": episodes(out, "base", "test", seeds), "train": episodes(out, "base", "train", seeds),
                 "dev": episodes(out / "step2" / "grid", "base", "dev", 1)},
        "zero": {split: episodes(cells[zero.name], zero.variant, split, n)
                 for split, n in (("test", seeds), ("train", seeds), ("dev", grid_seeds))},
        "dev": {s: episodes(folder, act.variant, "dev", grid_seeds) for s, folder in candidates.items()},
        "test": {s: episodes(candidates[s], act.variant, "test", seeds) for s in {1.0, share}},
        "train": {s: episodes(candidates[s], act.variant, "train", seeds) for s in {1.0, share}},
        "settings": {s: json.loads((folder / "setting.json").read_text()) for s, folder in candidates.items()},
        "zero_setting": json.loads((cells[zero.name] / "setting.json").read_text()),
        "budget": [budget_row("barrier + in-region", "zero RL", runs(cells[zero.name], zero.variant, seeds)),
                   *(budget_row("barrier + in-region", _share_label(s), runs(folder, act.variant, seeds))
                     for s, folder in candidates.items())],
        "iterations": {s: [len(training_log(r)) for r in runs(folder, act.variant, grid_seeds)]
                       for s, folder in candidates.items()},
        "barrier_md": (out / "step3" / "barrier_test" / "barrier.md").read_text(encoding="utf-8"),
        "ablations": {v: episodes(out / "step3" / "ablations", v, "test", plan["ablation_seeds"]) for v in plan["ablations"]},
    }
    return data


def _share_label(share: float) -> str:
    return "ACTGUIDE-RL, guidance throughout" if share == 1.0 else f"ACTGUIDE-RL, guidance for {share:g} of the budget"


# -- sections ------------------------------------------------------------------------------------------------------
def _header(ctx: PageContext) -> str:
    d = ctx.data
    r = d["record"]
    return template("actguide_schedule_intro", command=_runs(d, r["command"]), minutes=f"{r['seconds'] / 60:.1f}",
                    seeds=d["plan"]["seeds"], rollouts=d["plan"]["rollouts"], source=r["step2_source"],
                    zero=_cell_text(r["step2_choices"]["zero_rl"]), act=_cell_text(r["step2_choices"]["actguide"]))


def _cell_text(cell: list) -> str:
    return f"{cell[0]} update epochs, lr {cell[1]:g}"


def _runs(d: dict, text: str) -> str:
    return text.replace(d["out"], "RUNS").replace(d["plan"]["out"], "RUNS")


def _split(ctx: PageContext) -> str:
    d = ctx.data
    return ("## The three-way split of the test tasks\n\n"
            "Regions of the base (`steer-envs barrier --regions`; command below), per benchmark:\n\n"
            + "\n".join(benchmark_lines(d["regions"]["test"], d["base"]["test"])) + "\n\n"
            + _commands(d, "regions/test"))


def _dev(ctx: PageContext) -> str:
    d = ctx.data
    dev = d["groups"]["dev"]
    n = d["plan"]["grid_seeds"]
    chosen = d["record"]["share"]
    lines = ["## Dev: the share of the budget with guidance\n",
             f"ACTGUIDE-RL's step 2 cell with `guidance_until` = share, {n} training seed{'s' if n > 1 else ''} each, "
             f"unguided success on the dev regions of the same base ({len(dev['barrier'])} barrier, "
             f"{len(dev['in_region'])} in-region tasks), EM %. Rule, fixed before test: {d['choice']['rule']}.\n",
             "| Training | iterations (mean) | barrier | in-region | barrier + in-region |", "|---|---:|---:|---:|---:|",
             f"| base (initial policy) | – | {_success(d['base']['dev'], dev['barrier'])} | "
             f"{_success(d['base']['dev'], dev['in_region'])} | – |",
             f"| zero RL (its step 2 cell; not a candidate) | – | {_success(d['zero']['dev'], dev['barrier'])} | "
             f"{_success(d['zero']['dev'], dev['in_region'])} | – |"]
    for share in sorted(d["dev"], reverse=True):
        records, its = d["dev"][share], d["iterations"][share]
        label = _share_label(share) + (" (**chosen**)" if share == chosen else "")
        lines.append(f"| {label} | {sum(its) / len(its):.0f} | {_success(records, dev['barrier'])} | "
                     f"{_success(records, dev['in_region'])} | {d['choice']['scores'][f'{share:g}']:.1f} |")
    lines += ["", _card(d, "dev", d["settings"][chosen], "each row is the chosen row's setting with its own "
                        "`guidance_until`").rstrip(), ""]
    return "\n".join(lines) + "\n"


def _test(ctx: PageContext) -> str:
    d = ctx.data
    share = d["record"]["share"]
    groups = d["groups"]["test"]
    chosen, always, zero = d["test"][share], d["test"][1.0], d["zero"]["test"]
    n = d["plan"]["seeds"]
    lines = [f"## Test: the chosen share ({share:g}) against zero RL, {n} training seed{'s' if n > 1 else ''} each\n",
             "ACTGUIDE-RL below is the chosen row of the dev table; zero RL its own step 2 cell; equal rollout budgets "
             "(probes and guided rollouts counted), evaluation without a hint.\n",
             _card(d, "test", d["settings"][share], "ACTGUIDE-RL; zero RL: its cell's setting without guidance").rstrip(),
             "", *region_table(d["base"]["test"], zero, chosen, groups), "",
             _acceptance(d, zero, chosen).rstrip(), ""]
    if share != 1.0:
        lines += ["Against ACTGUIDE-RL guided throughout (share 1, the regions page's chosen cell; same seeds):", "",
                  "| Region | guided throughout − zero RL | chosen share − guided throughout |", "|---|---:|---:|",
                  *(f"| {REGION_LABEL[g]} | {fmt_gain(region_gain(always, zero, groups[g]))} | "
                    f"{fmt_gain(region_gain(chosen, always, groups[g]))} |" for g in REGION_ORDER), ""]
    lines += ["Where the budget went (training logs, means over training seeds):", "", *budget_lines(d["budget"]), "",
              "**Barrier diagnostics before and after, on the test barrier group** (`steer-envs barrier`, seed 0 of each "
              "run; M_t: the potential of step t, κ_t its carry-over, B_k: the hint's lift at k reference actions; "
              "unguided Pass@K is the k = 0 column):", "",
              _card(d, "test", d["settings"][share], "the barrier group", tasks=len(groups["barrier"]),
                    per_task="the diagnostics' rollouts per estimate (`steer-envs barrier` defaults)").rstrip(), "",
              d["barrier_md"].strip(), ""]
    return "\n".join(lines) + "\n"


def _train(ctx: PageContext) -> str:
    """The same models on the RL pool's own train tasks: whether guidance taught the tasks it guided (success) or only
    widened what the policy reaches (Pass@8)."""
    d = ctx.data
    share = d["record"]["share"]
    groups = d["groups"]["train"]
    zero, always, chosen = d["zero"]["train"], d["train"][1.0], d["train"][share]
    rows = [("base", d["base"]["train"]), ("zero RL", zero), ("guided throughout", always)]
    if share != 1.0:
        rows.append((f"chosen share ({share:g})", chosen))
    lines = ["## The same models on the RL pool's own train tasks\n",
             "Regions of the base on the pool's train tasks (`RUNS/regions_train`); the training pool holds the barrier "
             "and in-region ones. Success, in parentheses unguided Pass@8; gains over zero RL paired as above.\n",
             _card(d, "train", d["settings"][share], "the chosen share; the other rows their own settings").rstrip(), "",
             "| Region | tasks | " + " | ".join(label for label, _ in rows) + " | guided throughout − zero RL | "
             + ("chosen share − zero RL |" if share != 1.0 else ""),
             "|---|---:|" + "---:|" * (len(rows) + 1 + (share != 1.0))]
    for g in REGION_ORDER:
        cells = [f"{_success(records, groups[g])} ({pass_at_k(records, groups[g]):.1f})" for _, records in rows]
        gains = [fmt_gain(region_gain(always, zero, groups[g]))]
        if share != 1.0:
            gains.append(fmt_gain(region_gain(chosen, zero, groups[g])))
        lines.append(f"| {REGION_LABEL[g]} | {len(groups[g])} | " + " | ".join(cells + gains) + " |")
    return "\n".join(lines) + "\n\n"


def _ablations(ctx: PageContext) -> str:
    d = ctx.data
    share = d["record"]["share"]
    n = d["schedule"]["ablation_seeds"]
    reference = [r for r in d["test"][share] if r.seed // 100 < n]
    return (f"## Ablations and noise at the chosen share ({n} training seed{'s' if n > 1 else ''} each)\n\n"
            "Every variant's switches on top of the chosen share's setting (`sft_rl`: zero RL's cell), on test; "
            "variant − ACTGUIDE-RL on the same training and evaluation seeds.\n\n"
            + _card(d, "test", d["settings"][share], "each variant: `VARIANTS[V]` applied to this setting")
            + _effect_table(d, d["ablations"], reference))


def _all_commands(ctx: PageContext) -> str:
    return ("Commands (each resumable; written by the generator as it ran them):\n\n"
            + _commands(ctx.data, "base", "regions", "chosen", "schedule", "step3"))


PAGE = Page(
    name="results_actguide_schedule", help="ACTGUIDE-RL with guidance for a share of the budget (issue 22)",
    doc="docs/results_actguide_schedule.md", out="runs/actguide_regions", load=load,
    sections=(Section("header", _header), Section("split", _split), Section("dev", _dev), Section("test", _test), Section("train", _train),
              Section("ablations", _ablations), Section("commands", _all_commands)),
)
