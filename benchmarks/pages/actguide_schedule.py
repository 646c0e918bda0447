"""``docs/results_actguide_schedule.md``: ACTGUIDE-RL with guidance for a share of the budget (and rescued tasks
revisited) against zero RL, per region of the base policy, unguided evaluation (issue 22).

The runs are made by ``python -m benchmarks.harness.actguide_schedule_doc --out OUT`` (resumable), which shares the
regions pipeline's folder and records its plan, choices and commands in ``OUT/schedule_page.json``; everything
measured is read back here from the run folders. ``steer-envs report results_actguide_schedule --out OUT`` rebuilds
the page without running anything.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.actguide_regions import (
    REGION_LABEL, REGION_ORDER, benchmark_lines, budget_lines, budget_row, episode_folder, fmt_gain, pass_at_k,
    region_gain, region_table, run_folder, training_log,
)

from .actguide_regions import (
    STEP2_METHODS, _acceptance, _card, _commands, _effect_table, _runs, _success, cell_name, read_records,
)
from .builder import Page, PageContext, Section, read_run_json, template

PAGE_FILE = "schedule_page.json"
GENERATOR = "python -m benchmarks.harness.actguide_schedule_doc"


@dataclass(frozen=True)
class Candidate:
    """One ACTGUIDE-RL setting tried on dev: config overrides on top of its step 2 cell. ``late`` marks a candidate
    added after a test reading of the first ones (the page says so: its choice on dev is not blind to test)."""

    name: str
    overrides: tuple[tuple[str, Any], ...]
    label: str
    late: bool = False


#: the candidates in the order a tie is broken (the first wins: the less changed method); "always" is the step 2 cell
CANDIDATES = (
    Candidate("always", (), "guidance throughout (the step 2 cell)"),
    *(Candidate(f"until{share:g}", (("guidance_until", share),), f"guidance for {share:g} of the budget")
      for share in (0.75, 0.5, 0.25)),
    Candidate("revisit", (("revisit_rescued", True),), "guidance throughout, rescued tasks revisited", late=True),
    Candidate("until0.5_revisit", (("guidance_until", 0.5), ("revisit_rescued", True)),
              "guidance for 0.5 of the budget, rescued tasks revisited", late=True),
)
CANDIDATE = {c.name: c for c in CANDIDATES}
#: the step 2 cells (update_epochs, lr) the regions page's dev grid chose (docs/results_actguide_regions.md), used when
#: the run folder holds no ``step2/choices.json`` of its own
STEP2_CHOICE = {"zero_rl": (4, 0.01), "actguide": (8, 0.01)}


def ablation_root(out: Path, name: str, same_seeds: bool = True) -> Path:
    """Where the ablations of the chosen candidate live: per candidate under ``step3/ablations``; for "always" (the
    step 2 cell, with the regions pipeline's ablation seeds) the regions pipeline's own ``step2/ablations``."""
    return out / "step2" / "ablations" if name == "always" and same_seeds else out / "step3" / "ablations" / name


def candidate_folder(out: Path, name: str, step2_cell: Path) -> Path:
    """Where a candidate's runs live: the step 2 cell itself for "always", else ``step3/grid/actguide_NAME``."""
    return step2_cell if name == "always" else out / "step3" / "grid" / f"actguide_{name}"


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
    candidates = {name: candidate_folder(out, name, cells[act.name]) for name in plan["candidates"]}
    chosen = record["chosen"]
    runs = lambda folder, variant, n: [run_folder(folder, variant, s) for s in range(n)]  # noqa: E731
    shown = dict.fromkeys(["always", chosen])  # the rows evaluated on test and train
    data: dict[str, Any] = {
        "record": record, "plan": regions_plan, "schedule": plan, "regions": regions, "groups": groups,
        "out": str(Path(regions_plan["out"]).resolve()), "choice": json.loads((out / "step3" / "choice.json").read_text()),
        "base": {"test": episodes(out, "base", "test", seeds), "train": episodes(out, "base", "train", seeds),
                 "dev": episodes(out / "step2" / "grid", "base", "dev", 1)},
        "zero": {split: episodes(cells[zero.name], zero.variant, split, n)
                 for split, n in (("test", seeds), ("train", seeds), ("dev", grid_seeds))},
        "dev": {name: episodes(folder, act.variant, "dev", grid_seeds) for name, folder in candidates.items()},
        "test": {name: episodes(candidates[name], act.variant, "test", seeds) for name in shown},
        "train": {name: episodes(candidates[name], act.variant, "train", seeds) for name in shown},
        "settings": {name: json.loads((folder / "setting.json").read_text()) for name, folder in candidates.items()},
        "budget": [budget_row("barrier + in-region", "zero RL", runs(cells[zero.name], zero.variant, seeds)),
                   *(budget_row("barrier + in-region", CANDIDATE[name].label, runs(folder, act.variant, seeds))
                     for name, folder in candidates.items())],
        "iterations": {name: [len(training_log(r)) for r in runs(folder, act.variant, grid_seeds)]
                       for name, folder in candidates.items()},
        "barrier_md": (out / "step3" / "barrier_test" / "barrier.md").read_text(encoding="utf-8"),
        "ablations": {v: episodes(ablation_root(out, chosen, plan["ablation_seeds"] == regions_plan["ablation_seeds"]),
                                  v, "test", plan["ablation_seeds"]) for v in plan["ablations"]},
    }
    return data


# -- sections ------------------------------------------------------------------------------------------------------
def _header(ctx: PageContext) -> str:
    d = ctx.data
    r = d["record"]
    return template("actguide_schedule_intro", command=_runs(d, r["command"]), minutes=f"{r['seconds'] / 60:.1f}",
                    seeds=d["plan"]["seeds"], rollouts=d["plan"]["rollouts"], source=r["step2_source"],
                    zero=_cell_text(r["step2_choices"]["zero_rl"]), act=_cell_text(r["step2_choices"]["actguide"]))


def _cell_text(cell: list) -> str:
    return f"{cell[0]} update epochs, lr {cell[1]:g}"


def _split(ctx: PageContext) -> str:
    d = ctx.data
    return ("## The three-way split of the test tasks\n\n"
            "Regions of the base (`steer-envs barrier --regions`; command below), per benchmark:\n\n"
            + _card(d, "test", d["plan"]["base"], "the base's regions; the setting is the base's training",
                    per_task="unguided Pass@32 and hinted Pass@8 at k <= 4 (`steer-envs barrier --regions` defaults)")
            + "\n".join(benchmark_lines(d["regions"]["test"], d["base"]["test"])) + "\n\n"
            + _commands(d, "regions/test"))


def _dev(ctx: PageContext) -> str:
    d = ctx.data
    dev = d["groups"]["dev"]
    n = d["plan"]["grid_seeds"]
    chosen = d["record"]["chosen"]
    late = [CANDIDATE[name].label for name in d["dev"] if CANDIDATE[name].late]
    lines = ["## Dev: the candidates\n",
             f"ACTGUIDE-RL's step 2 cell with each candidate's switches, {n} training seed{'s' if n > 1 else ''} each, "
             f"unguided success on the dev regions of the same base ({len(dev['barrier'])} barrier, "
             f"{len(dev['in_region'])} in-region tasks), EM %. Rule, fixed before test: {d['choice']['rule']}."
             + (f" Added after the test reading of the first choice (so their choice is not blind to test): "
                f"{'; '.join(late)}." if late else "") + "\n",
             "| Training | iterations (mean) | barrier | in-region | barrier + in-region |", "|---|---:|---:|---:|---:|",
             f"| base (initial policy) | – | {_success(d['base']['dev'], dev['barrier'])} | "
             f"{_success(d['base']['dev'], dev['in_region'])} | – |",
             f"| zero RL (its step 2 cell; not a candidate) | – | {_success(d['zero']['dev'], dev['barrier'])} | "
             f"{_success(d['zero']['dev'], dev['in_region'])} | – |"]
    for name, records in d["dev"].items():
        its = d["iterations"][name]
        label = CANDIDATE[name].label + (" (**chosen**)" if name == chosen else "")
        lines.append(f"| {label} | {sum(its) / len(its):.0f} | {_success(records, dev['barrier'])} | "
                     f"{_success(records, dev['in_region'])} | {d['choice']['scores'][name]:.1f} |")
    lines += ["", _card(d, "dev", d["settings"][chosen], "the chosen row; every other row is its step 2 cell with its "
                        "own switches").rstrip(), ""]
    return "\n".join(lines) + "\n"


def _test(ctx: PageContext) -> str:
    d = ctx.data
    name = d["record"]["chosen"]
    groups = d["groups"]["test"]
    chosen, always, zero = d["test"][name], d["test"]["always"], d["zero"]["test"]
    n = d["plan"]["seeds"]
    lines = [f"## Test: the chosen candidate ({CANDIDATE[name].label}) against zero RL, {n} training "
             f"seed{'s' if n > 1 else ''} each\n",
             "ACTGUIDE-RL below is the chosen row of the dev table; zero RL its own step 2 cell; equal rollout budgets "
             "(probes and guided rollouts counted), evaluation without a hint.\n",
             _card(d, "test", d["settings"][name], "ACTGUIDE-RL; zero RL: its cell's setting without guidance").rstrip(),
             "", *region_table(d["base"]["test"], zero, chosen, groups), "",
             _acceptance(d, zero, chosen).rstrip(), ""]
    if name != "always":
        lines += ["Against ACTGUIDE-RL guided throughout (the regions page's chosen cell; same seeds):", "",
                  "| Region | guided throughout − zero RL | chosen − guided throughout |", "|---|---:|---:|",
                  *(f"| {REGION_LABEL[g]} | {fmt_gain(region_gain(always, zero, groups[g]))} | "
                    f"{fmt_gain(region_gain(chosen, always, groups[g]))} |" for g in REGION_ORDER), ""]
    lines += ["Where the budget went (training logs, means over training seeds):", "", *budget_lines(d["budget"]), "",
              "**Barrier diagnostics before and after, on the test barrier group** (`steer-envs barrier`, seed 0 of each "
              "run; M_t: the potential of step t, κ_t its carry-over, B_k: the hint's lift at k reference actions; "
              "unguided Pass@K is the k = 0 column):", "",
              _card(d, "test", d["settings"][name], "the barrier group", tasks=len(groups["barrier"]),
                    per_task="the diagnostics' rollouts per estimate (`steer-envs barrier` defaults)").rstrip(), "",
              d["barrier_md"].strip(), ""]
    return "\n".join(lines) + "\n"


def _train(ctx: PageContext) -> str:
    """The same models on the RL pool's own train tasks: whether guidance taught the tasks it guided (success) or only
    widened what the policy reaches (Pass@8)."""
    d = ctx.data
    name = d["record"]["chosen"]
    groups = d["groups"]["train"]
    zero, always, chosen = d["zero"]["train"], d["train"]["always"], d["train"][name]
    rows = [("base", d["base"]["train"]), ("zero RL", zero), ("guided throughout", always)]
    gains = [("guided throughout − zero RL", always)]
    if name != "always":
        rows.append(("chosen", chosen))
        gains.append(("chosen − zero RL", chosen))
    lines = ["## The same models on the RL pool's own train tasks\n",
             "Regions of the base on the pool's train tasks (`RUNS/regions_train`); the training pool holds the barrier "
             "and in-region ones. Success, in parentheses unguided Pass@8; gains over zero RL paired as above.\n",
             _card(d, "train", d["settings"][name], "the chosen row; the other rows their own settings").rstrip(), "",
             "| Region | tasks | " + " | ".join(label for label, _ in rows + gains) + " |",
             "|---|---:|" + "---:|" * (len(rows) + len(gains))]
    for g in REGION_ORDER:
        cells = [f"{_success(records, groups[g])} ({pass_at_k(records, groups[g]):.1f})" for _, records in rows]
        cells += [fmt_gain(region_gain(records, zero, groups[g])) for _, records in gains]
        lines.append(f"| {REGION_LABEL[g]} | {len(groups[g])} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


def _ablations(ctx: PageContext) -> str:
    d = ctx.data
    name = d["record"]["chosen"]
    n = d["schedule"]["ablation_seeds"]
    reference = [r for r in d["test"][name] if r.seed // 100 < n]
    return (f"## Ablations and noise at the chosen candidate ({n} training seed{'s' if n > 1 else ''} each)\n\n"
            f"Every variant's switches on top of the chosen setting ({CANDIDATE[name].label}; `sft_rl`: zero RL's "
            "cell), on test; variant − ACTGUIDE-RL on the same training and evaluation seeds.\n\n"
            + _card(d, "test", d["settings"][name], "each variant: `VARIANTS[V]` applied to this setting")
            + _effect_table(d, d["ablations"], reference))


def _all_commands(ctx: PageContext) -> str:
    return ("Commands (each resumable; written by the generator as it ran them):\n\n"
            + _commands(ctx.data, "base", "regions", "chosen", "schedule", "step3"))


PAGE = Page(
    name="results_actguide_schedule", help="ACTGUIDE-RL with guidance for a share of the budget (issue 22)",
    doc="docs/results_actguide_schedule.md", out="runs/actguide_regions", load=load,
    sections=(Section("header", _header), Section("split", _split), Section("dev", _dev), Section("test", _test),
              Section("train", _train), Section("ablations", _ablations), Section("commands", _all_commands)),
)
