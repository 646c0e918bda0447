"""``docs/results_actguide_regions.md`` and ``..._train.md``: ACTGUIDE-RL against zero RL per region of the base
policy (in-region / barrier / out of reach), unguided evaluation (issue 22).

The runs are made by ``python -m benchmarks.harness.actguide_regions_doc --out OUT`` (resumable), which records its
plan, dev choices and commands in ``OUT/regions_page.json``; everything measured is read back here from the run
folders: regions files, episode logs, training logs, the barrier diagnostics and the alignment rows.
``steer-envs report results_actguide_regions --out OUT`` rebuilds the page without running anything (and
``results_actguide_regions_train`` the train-split one).
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from steer_envs.episodes import EpisodeLog, EpisodeRecord

from benchmarks.actguide_regions import (
    REGION_LABEL, REGION_ORDER, benchmark_lines, budget_lines, budget_row, episode_folder, fmt_gain, pool_gain_lines,
    region_gain, region_table, run_folder, success, training_log,
)

from .builder import Page, PageContext, Section, read_run_json, template

PAGE_FILE = "regions_page.json"
GENERATOR = "python -m benchmarks.harness.actguide_regions_doc"
#: the step 2 dev grid (update_epochs, lr), the same for every method; chosen before test
GRID_CELLS = ((2, 0.003), (4, 0.003), (8, 0.003), (16, 0.003), (4, 0.01), (8, 0.01), (16, 0.01))


@dataclass(frozen=True)
class Step2Method:
    """One column of the step 2 grid: a train variant with config overrides, on ``cells`` of the grid; the rule
    chooses a cell for it when ``chosen_by_rule`` (the group-baseline column is shown for reference only)."""

    name: str
    variant: str
    overrides: tuple[tuple[str, Any], ...]
    label: str
    cells: tuple[tuple[int, float], ...]
    chosen_by_rule: bool


STEP2_METHODS = (
    Step2Method("zero_rl", "zero_rl", (), "zero RL", GRID_CELLS, True),
    Step2Method("actguide", "actguide", (("guided_baseline", "unguided"),), "ACTGUIDE-RL, unguided baseline",
                GRID_CELLS, True),
    Step2Method("actguide_group", "actguide", (), "ACTGUIDE-RL, group baseline (the setting's rule)",
                ((2, 0.003), (4, 0.003)), False),
    *(Step2Method(f"actguide_w{w:g}", "actguide", (("guided_baseline", "unguided"), ("guided_weight", float(w))),
                  f"ACTGUIDE-RL, unguided baseline, guided_weight {w:g}", ((4, 0.01),), False) for w in (2, 4)),
)
VARIANT_NOTES = {
    "no_mixed": "guided rollouts trained on the guided prompt", "no_fallback": "no full guidance after a failed search",
    "no_adaptive": "full guidance at once", "fixed_k": "k = 1, no search",
    "clip_rmix": "PPO clip of r_mix instead of the shaped weight", "prefix": "reference searches executed, not shown",
    "sft_rl": "SFT on the action data, then zero RL", "noise_10": "10% of reference actions wrong",
    "noise_20": "20% wrong",
}


def cell_name(method: str, epochs: int, lr: float) -> str:
    return f"{method}_e{epochs}_lr{lr:g}"


def grid_cells(method: Step2Method, grid) -> tuple[tuple[int, float], ...]:
    """The cells of ``method`` that the plan's grid holds (the generator trains them, the page reads them)."""
    held = {tuple(c) for c in grid}
    return tuple(c for c in method.cells if c in held)


# -- reading the run folder ----------------------------------------------------------------------------------------
def read_records(path: Path, tasks: set[str], seeds: int, rollouts: int) -> list[EpisodeRecord]:
    """The episodes of ``path`` on ``tasks`` for training seeds ``< seeds`` and rollouts ``< rollouts`` (a log may
    hold more: a run with more seeds or rollouts wrote it)."""
    return [r for r in EpisodeLog(path).records
            if r.task_id in tasks and r.seed // 100 < seeds and r.seed % 100 < rollouts]


def load(out: Path) -> dict[str, Any]:
    from agents.actguide.regions import read_regions

    record = read_run_json(out / PAGE_FILE, f"{GENERATOR} --out {out}")
    plan = record["plan"]
    seeds, rollouts = plan["seeds"], plan["rollouts"]
    regions = {split: read_regions(out / f"regions_{split}" / "regions.json") for split in ("test", "dev", "train")}
    groups = {split: {name: {t for t, g in r.items() if g == name} for name in REGION_ORDER}
              for split, r in regions.items()}

    def episodes(folder: Path, label: str, split: str, n_seeds: int = seeds) -> list[EpisodeRecord]:
        return read_records(folder / episode_folder(split) / f"{label}.jsonl", set(regions[split]), n_seeds, rollouts)

    data: dict[str, Any] = {"record": record, "plan": plan, "regions": regions, "groups": groups,
                            "out": str(Path(plan["out"]).resolve()),
                            "pool_setting": json.loads((out / "pool_setting.json").read_text())}
    for split in ("test", "train"):
        data[split] = {"base": episodes(out, "base", split),
                       **{v: episodes(out, v, split) for v in ("zero_rl", "actguide")},
                       **{f"pool/{v}": episodes(out / "pool", v, split) for v in ("zero_rl", "actguide")}}
    n = plan["pool_ablation_seeds"]
    data["pool_ablations"] = {v: episodes(out / "pool" / "ablations", v, "test", n) for v in plan["ablations"]}
    data["budget"] = {(training, v): [run_folder(root, v, s) for s in range(seeds)]
                      for training, root in (("all tasks", out), ("barrier + in-region", out / "pool"))
                      for v in ("zero_rl", "actguide")}
    step2 = out / "step2"
    data["grid"] = {}
    for method in STEP2_METHODS:
        for epochs, lr in grid_cells(method, plan["grid"]):
            cell = step2 / "grid" / cell_name(method.name, epochs, lr)
            data["grid"][(method.name, epochs, lr)] = {
                "dev": episodes(cell, method.variant, "dev", plan["grid_seeds"]),
                "log": training_log(run_folder(cell, method.variant, 0)),
                "setting": json.loads((cell / "setting.json").read_text())}
    data["base_dev"] = episodes(step2 / "grid", "base", "dev", 1)
    data["half"] = {"dev": episodes(step2 / "half", "zero_rl", "dev", 1),
                    "log": training_log(run_folder(step2 / "half", "zero_rl", 0)),
                    "setting": json.loads((step2 / "half" / "setting.json").read_text())}
    data["chosen"] = {}
    for method in STEP2_METHODS:
        if method.name in record["choices"]:
            cell = step2 / "grid" / cell_name(method.name, *record["choices"][method.name])
            data["chosen"][method.name] = {"test": episodes(cell, method.variant, "test"), "folder": cell,
                                           "setting": json.loads((cell / "setting.json").read_text())}
    n = plan["ablation_seeds"]
    data["step2_ablations"] = {v: episodes(step2 / "ablations", v, "test", n) for v in plan["ablations"]}
    data["barrier_md"] = (step2 / "barrier_test" / "barrier.md").read_text(encoding="utf-8")
    data["alignment"] = json.loads((step2 / "align.json").read_text())
    return data


# -- pieces --------------------------------------------------------------------------------------------------------
def _card(data: dict, split: str, setting: dict, what: str, tasks: int | None = None, per_task: str | None = None) -> str:
    """A table's setting card: split, task count (``tasks``: a region's, when not the split's), code, corpus, what was
    run per task (``per_task``; default the evaluation's rollouts) and the training setting."""
    from benchmarks.harness.provenance import code_version
    from benchmarks.harness.setting import corpus_card

    corpus = corpus_card(setting.get("data_dir"))
    tasks = len(data["regions"][split]) if tasks is None else tasks
    per_task = per_task or f"{data['plan']['rollouts']} rollouts per task and training seed"
    return (f"*Setting card ({what}): split {split}, {tasks} tasks, code `{code_version()}`, "
            f"corpus `{corpus[0]}` ({corpus[1]}), {per_task}, "
            f"training setting `{_runs(data, json.dumps(setting, sort_keys=True))}`.*\n\n")


def _region_table(data: dict, split: str, zero: list, act: list) -> str:
    return "\n".join(region_table(data[split]["base"], zero, act, data["groups"][split])) + "\n\n"


def _effect_table(data: dict, rows: dict[str, list], reference: list) -> str:
    lines = ["| Variant (what is removed or changed) | barrier: variant − ACTGUIDE-RL | in-region: variant − ACTGUIDE-RL |",
             "|---|---:|---:|"]
    groups = data["groups"]["test"]
    for variant, records in rows.items():
        cells = [fmt_gain(region_gain(records, reference, groups[g])) for g in ("barrier", "in_region")]
        lines.append(f"| {variant} ({VARIANT_NOTES.get(variant, '')}) | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n\n"


def _commands(data: dict, *prefixes: str) -> str:
    """A code block of the generator's commands whose keys start with one of ``prefixes`` (in the order it ran
    them; a command shared by several keys once)."""
    commands = data["record"]["commands"]
    shown = dict.fromkeys(_runs(data, c) for k, c in commands.items() if k.startswith(prefixes))
    return "```\n" + "\n".join(shown) + "\n```\n\n"


def _runs(data: dict, text: str) -> str:
    """``text`` with the run folder's path written ``RUNS`` (the page is read on other machines)."""
    return text.replace(data["out"], "RUNS").replace(data["plan"]["out"], "RUNS")


def _success(records: list, tasks: set[str]) -> str:
    """Unguided success on ``tasks`` as the page shows it (– for a region without tasks)."""
    value = success(records, tasks) if tasks else float("nan")
    return "–" if np.isnan(value) else f"{value:.1f}"


# -- sections ------------------------------------------------------------------------------------------------------
def _header(ctx: PageContext) -> str:
    d = ctx.data
    return template("actguide_regions_intro", command=_runs(d, d["record"]["command"]), seeds=d["plan"]["seeds"],
                    rollouts=d["plan"]["rollouts"], minutes=f"{d['record']['seconds'] / 60:.1f}")


def _documented(ctx: PageContext) -> str:
    d = ctx.data
    test = d["test"]
    budget = [budget_row(training, v, folders) for (training, v), folders in d["budget"].items()]
    pooled = {v: test[f"pool/{v}"] for v in ("zero_rl", "actguide")}
    text = ["## Trained on the whole RL pool (the documented setting)\n\n", _card(d, "test", d["plan"]["setting"], "both methods"),
            _region_table(d, "test", test["zero_rl"], test["actguide"]),
            "## Trained where the barrier is\n\n",
            f"The same comparison, both methods trained on the RL pool kept to its barrier and in-region tasks "
            f"(`pool_regions`: {d['record']['pool']['kept']} of the pool's {d['record']['pool']['all']} train tasks; the "
            f"base's regions of those tasks: {_region_counts(d['regions']['train'])}), "
            "so no rollout goes to a task the base cannot reach even with a hint. Same base, budget, evaluation tasks "
            "and rollout seeds.\n\n",
            _card(d, "test", d["pool_setting"], "both methods, the barrier pool"),
            _region_table(d, "test", pooled["zero_rl"], pooled["actguide"]),
            "Pooled against whole-pool training (paired, same evaluation seeds):\n\n",
            "\n".join(pool_gain_lines(pooled, test, d["groups"]["test"])) + "\n",
            "\nWhere the budget went (training logs, means over training seeds):\n\n", "\n".join(budget_lines(budget)) + "\n",
            "\nTest tasks per benchmark and region (the three-way split):\n\n",
            "\n".join(benchmark_lines(d["regions"]["test"], test["base"])) + "\n\n",
            "Commands (each resumable; written by the generator as it ran them):\n\n",
            _commands(d, "base", "regions", "all/", "pool/")]
    return "".join(text)


def _region_counts(regions: dict[str, str]) -> str:
    counts = {name: sum(1 for g in regions.values() if g == name) for name in REGION_ORDER}
    return ", ".join(f"{counts[name]} {REGION_LABEL[name]}" for name in REGION_ORDER)


def _pool_ablations(ctx: PageContext) -> str:
    d = ctx.data
    n = d["plan"]["pool_ablation_seeds"]
    reference = [r for r in d["test"]["pool/actguide"] if r.seed // 100 < n]
    return (f"## Ablations and noise at the documented setting ({n} training seed{'s' if n > 1 else ''})\n\n"
            "Each variant of `agents/actguide/config.py:VARIANTS`, trained on the barrier pool with the documented "
            "setting, evaluated as above on test; variant − ACTGUIDE-RL on the same training and evaluation seeds.\n\n"
            + _card(d, "test", d["pool_setting"], "each variant: `VARIANTS[V]` applied to this setting")
            + _effect_table(d, d["pool_ablations"], reference))


def _mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


def _step2(ctx: PageContext) -> str:
    d = ctx.data
    grid, dev = d["grid"], d["groups"]["dev"]
    push = [(m.label, grid[key]) for m in STEP2_METHODS for key in [(m.name, *d["plan"]["grid"][0])]
            if key in grid and m.variant == "actguide"]
    lines = [template("actguide_regions_step2"),
             "| Run (seed 0, grid cell e{0} lr{1:g}) | guided push toward | guided push away |".format(*d["plan"]["grid"][0]),
             "|---|---:|---:|"]
    lines += [f"| {label} | {_mean(cell['log'], 'guided_push_up'):.2f} | {_mean(cell['log'], 'guided_push_down'):.2f} |"
              for label, cell in push]
    group = grid.get(("actguide_group", *d["plan"]["grid"][0]))
    half = d["half"]
    lines += ["", f"**Equal updates, not only equal rollouts** (dev, seed 0): zero RL at half the budget "
              f"({half['setting']['budget']} rollouts, {len(half['log'])} iterations) against ACTGUIDE-RL with the group "
              f"baseline ({group['setting']['budget'] if group else '–'} rollouts, {len(group['log']) if group else '–'} "
              "iterations), the first grid cell.", "",
              "| Region (dev) | zero RL, half budget | ACTGUIDE-RL, group baseline |", "|---|---:|---:|"]
    group_seed0 = [r for r in group["dev"] if r.seed // 100 == 0] if group else []  # paired with the half run's seed
    for g in ("barrier", "in_region"):
        lines.append(f"| {g.replace('_', '-')} | {_success(half['dev'], dev[g])} | "
                     f"{_success(group_seed0, dev[g]) if group else '–'} |")
    lines += ["", _card(d, "dev", half["setting"], "the half-budget zero RL; the ACTGUIDE-RL runs of both tables are "
                        "their grid cells' settings, below").rstrip()]
    n = d["plan"]["grid_seeds"]
    chosen = [m for m in STEP2_METHODS if m.chosen_by_rule]
    lines += ["", f"**Dev grid** ({n} training seed{'s' if n > 1 else ''} per cell, mean; dev regions of the same base: "
              f"{len(dev['barrier'])} barrier, {len(dev['in_region'])} in-region tasks; unguided success, EM %; base: "
              f"{_success(d['base_dev'], dev['barrier'])} / {_success(d['base_dev'], dev['in_region'])}). "
              "The same `update_epochs` × `lr` grid for both chosen methods; the rule, fixed before test: the cell with "
              "the highest barrier + in-region success (mean over the cell's seeds), per method. One seed per cell moves "
              "zero RL's barrier success by as much as the methods differ, hence the seeds.", "",
              "| update_epochs | lr | " + " | ".join(f"{m.label}: barrier / in-region" for m in chosen) + " |",
              "|---:|---:|" + "---:|" * len(chosen)]
    for epochs, lr in (tuple(c) for c in d["plan"]["grid"]):
        cells = [_dev_cell(d, m, epochs, lr) for m in chosen]
        lines.append(f"| {epochs} | {lr:g} | " + " | ".join(cells) + " |")
    lines += ["", "Other ACTGUIDE-RL settings on the same dev tasks and seeds (shown, not chosen among):", "",
              "| Setting | update_epochs | lr | barrier / in-region |", "|---|---:|---:|---:|"]
    lines += [f"| {m.label} | {key[1]} | {key[2]:g} | {_dev_cell(d, m, key[1], key[2])} |"
              for m in STEP2_METHODS if not m.chosen_by_rule for key in grid if key[0] == m.name]
    lines += ["", _card(d, "dev", d["plan"]["setting"], "each cell is `pool_setting.json` with the cell's "
                        "`update_epochs`, `lr` and the method's overrides"), ""]
    return "\n".join(lines)


def _dev_cell(d: dict, method: Step2Method, epochs: int, lr: float) -> str:
    """``barrier / in-region`` dev success of one grid cell (bold when the rule chose it; – when not run)."""
    cell = d["grid"].get((method.name, epochs, lr))
    if cell is None:
        return "–"
    dev = d["groups"]["dev"]
    text = f"{_success(cell['dev'], dev['barrier'])} / {_success(cell['dev'], dev['in_region'])}"
    return f"**{text}** (chosen)" if d["record"]["choices"].get(method.name) == [epochs, lr] else text


def _chosen(ctx: PageContext) -> str:
    d = ctx.data
    chosen = d["chosen"]
    if not {"zero_rl", "actguide"} <= set(chosen):
        return ""
    zero, act = chosen["zero_rl"], chosen["actguide"]
    c = d["record"]["choices"]
    text = [f"**Test, the chosen pair, {d['plan']['seeds']} training seeds each** (zero RL: {c['zero_rl'][0]} epochs, "
            f"lr {c['zero_rl'][1]:g}; ACTGUIDE-RL, unguided baseline: {c['actguide'][0]} epochs, lr {c['actguide'][1]:g}).\n\n",
            _card(d, "test", act["setting"], "ACTGUIDE-RL; zero RL the same without `guided_baseline` and with its own cell"),
            _region_table(d, "test", zero["test"], act["test"]), _acceptance(d, zero["test"], act["test"]),
            "**Barrier diagnostics before and after, on the test barrier group** (`steer-envs barrier`, seed 0 of each "
            "chosen run; M_t: the potential of step t, κ_t its carry-over, B_k: the hint's lift at k reference "
            "actions):\n\n",
            _card(d, "test", act["setting"], "the barrier group; ACTGUIDE-RL's setting, zero RL's is its own cell",
                  tasks=len(d["groups"]["test"]["barrier"]),
                  per_task="the diagnostics' rollouts per estimate (`steer-envs barrier` defaults unless the command "
                           "below says otherwise)"),
            d["barrier_md"].strip() + "\n\n",
            "**Did the hinted actions reach π_u?** `benchmarks.actguide_alignment` on the pool's own train tasks "
            "(reference actions replayed unguided; × candidates: π_u(reference) times the size of the admissible set, "
            "1 = uniform):\n\n",
            _card(d, "train", d["pool_setting"], "the models' training settings are the tables' above",
                  tasks=sum(len(d["groups"]["train"][g]) for g in ("barrier", "in_region")),
                  per_task="every reference step of the barrier and in-region tasks scored once"),
            _alignment_table(d["alignment"])]
    n = d["plan"]["ablation_seeds"]
    reference = [r for r in act["test"] if r.seed // 100 < n]
    text += [f"**Ablations and noise at the step 2 setting** ({n} training seed{'s' if n > 1 else ''} each; every "
             "variant's switches on top of the chosen ACTGUIDE-RL cell, `sft_rl` on zero RL's chosen cell; test; "
             "variant − ACTGUIDE-RL, paired over the same training and evaluation seeds):\n\n",
             _card(d, "test", act["setting"], "each variant: `VARIANTS[V]` applied to this setting; `sft_rl` to zero "
                   "RL's chosen cell"),
             _effect_table(d, d["step2_ablations"], reference), _commands(d, "chosen", "ablation")]
    return "".join(text)


def _acceptance(d: dict, zero: list, act: list) -> str:
    """Issue 22's second acceptance point, read off the table: the barrier interval above 0 (its lower end > 0), the
    in-region interval not below 0 (its upper end >= 0: no measured fall; an interval wholly below 0 is a fall). The
    stricter reading of the second half (lower end >= 0) is given beside it."""
    groups = d["groups"]["test"]
    barrier, in_region = (region_gain(act, zero, groups[g]) for g in ("barrier", "in_region"))
    if barrier is None or in_region is None:
        return ""
    above, not_below = barrier.low > 0, in_region.high >= 0
    return (f"ACTGUIDE-RL − zero RL: barrier {fmt_gain(barrier)} (interval {'above' if above else 'not above'} 0), "
            f"in-region {fmt_gain(in_region)} (interval {'not below' if not_below else 'below'} 0; its lower end "
            f"{'is' if in_region.low >= 0 else 'is not'} >= 0): the acceptance point (barrier above 0, in-region not "
            f"below 0) is **{'met' if above and not_below else 'not met'}**.\n\n")


def _alignment_table(rows: list[dict]) -> str:
    by_model: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        by_model[r["model"]][r["region"]] = r
    lines = ["| Model (seed 0) | barrier: × candidates | barrier: reference is π_u's top | in-region: × candidates | "
             "in-region: top |", "|---|---:|---:|---:|---:|"]
    for model, regions in by_model.items():
        cells = []
        for g in ("barrier", "in_region"):
            r = regions.get(g)
            cells += (["–", "–"] if not r or r["p_over_uniform"] is None
                      else [f"{r['p_over_uniform']:.2f}", f"{100 * r['top1']:.1f}%"])
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


def _step2_commands(ctx: PageContext) -> str:
    return ("Commands of the dev grid, the half budget, the diagnostics and the alignment:\n\n"
            + _commands(ctx.data, "grid", "half", "barrier", "alignment"))


def _train_page(ctx: PageContext) -> str:
    d = ctx.data
    train = d["train"]
    return ("# ACTGUIDE-RL by task region, on the RL pool's own train tasks\n\n"
            f"Generated by `{_runs(d, d['record']['command'])}` with [the test page](results_actguide_regions.md): did each "
            "method learn the tasks it trained on? Regions of the base on these tasks, same protocol.\n\n"
            + _card(d, "train", d["plan"]["setting"], "whole pool") + _region_table(d, "train", train["zero_rl"], train["actguide"])
            + "Trained where the barrier is (the pool kept to its barrier and in-region tasks):\n\n"
            + _card(d, "train", d["pool_setting"], "both methods, the barrier pool") + _region_table(d, "train", train["pool/zero_rl"], train["pool/actguide"]))


PAGE = Page(
    name="results_actguide_regions", help="ACTGUIDE-RL against zero RL per region of the base policy (issue 22)",
    doc="docs/results_actguide_regions.md", out="runs/actguide_regions", load=load,
    sections=(Section("header", _header), Section("documented", _documented), Section("pool_ablations", _pool_ablations),
              Section("step2", _step2), Section("chosen", _chosen), Section("step2_commands", _step2_commands)),
)
TRAIN_PAGE = Page(
    name="results_actguide_regions_train", help="the same tables on the RL pool's own train tasks",
    doc="docs/results_actguide_regions_train.md", out="runs/actguide_regions", load=load,
    sections=(Section("train", _train_page),),
)
