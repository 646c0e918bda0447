"""``docs/results_actguide.md``: ACTGUIDE-RL against zero RL, its ablations, noisy guidance, the budget curve, the
barrier diagnostics and the cost of probes.

The runs are made by ``python -m benchmarks.harness.actguide_doc --out OUT`` (training runs, JSONL episode logs,
``barrier.json``, ``times.json``; resumable), which records its plan and commands in ``OUT/page.json``; this page is
rendered from those files only. Success rates, per-benchmark means, macro means and paired intervals come from the
harness (:mod:`benchmarks.harness.stats`, attribute ``em``); the learner's shape, λ₀, BM25's parameters and the
admissible set's size are read from the code (:mod:`.codefacts`); prose is in ``templates/actguide_*.md``.
``steer-envs report results_actguide --out OUT`` rebuilds it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.stats import Interval, benchmark_means, paired_gain
from benchmarks.harness.tables import BENCHMARK_TITLES
from steer_envs.data import BENCHMARKS
from steer_envs.episodes import EpisodeLog, EpisodeRecord
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import file_fingerprint

from . import codefacts
from .builder import Page, PageContext, page_sections, read_run_json, template, template_section
from .provenance import code_version, machine_line, today
from .tables import markdown_table
from .timing import read_times, wall

PAGE_FILE = "page.json"
#: the documented training setting: these fields of ActGuideConfig, at their defaults (read from the dataclass)
SETTING_FIELDS = (
    "tasks_per_benchmark",
    "budget",
    "batch_tasks",
    "group_size",
    "max_turns",
    "metric",
    "lr",
    "update_epochs",
    "clip_eps",
    "kl_coef",
    "probes_per_step",
    "max_probe_steps",
    "plan_mode",
    "ratio_shaping",
    "luffy_gamma",
)
MAIN = ("zero_rl", "actguide")
ABLATIONS = ("sft_rl", "fixed_k", "no_adaptive", "no_fallback", "no_mixed", "clip_rmix", "prefix")
NOISE = ("noise_10", "noise_20")
TURN_BUDGETS = (2, 4, 6, 8)


def default_setting() -> dict[str, Any]:
    from agents.actguide.config import ActGuideConfig

    return codefacts.dataclass_defaults(ActGuideConfig, SETTING_FIELDS)


def default_base() -> dict[str, Any]:
    """The base policy: zero RL on train tasks outside the RL pool (the stand-in for a pretrained base model)."""
    return {**default_setting(), "pool": "pretrain", "budget": 10000, "kl_coef": 0.1}


@dataclass
class Plan:
    out: Path
    seeds: int = 3  # training seeds of the main comparison
    ablation_seeds: int = 1  # training seeds of each ablation and noise level
    eval_split: str = "test"
    eval_tasks_per_benchmark: int = 40
    eval_rollouts: int = 8
    barrier_tasks_per_benchmark: int = 8
    setting: dict = field(default_factory=default_setting)
    base: dict = field(default_factory=default_base)
    variants: tuple[str, ...] = MAIN + ABLATIONS + NOISE
    seconds: dict = field(default_factory=dict)

    def make_quick(self) -> Plan:
        """Shrink this plan to the small dry run of ``actguide_doc --quick`` (tiny budgets, a few tasks per benchmark,
        one seed): the same pipeline and page in minutes. Returns the plan itself."""
        self.seeds = self.ablation_seeds = 1
        self.setting.update(tasks_per_benchmark=4, budget=200, batch_tasks=4)
        self.base.update(tasks_per_benchmark=4, budget=200, batch_tasks=4, pretrain_tasks_per_benchmark=8)
        self.eval_tasks_per_benchmark, self.eval_rollouts, self.barrier_tasks_per_benchmark = 3, 8, 1
        return self

    def seeds_of(self, variant: str) -> range:
        return range(self.seeds if variant in MAIN else self.ablation_seeds)

    def run_dir(self, variant: str, seed: int) -> Path:
        return self.out / "runs" / variant / f"seed{seed}"

    @property
    def base_dir(self) -> Path:
        return self.out / "runs" / "base"

    def to_json(self) -> dict[str, Any]:
        return {
            k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
            for k, v in asdict(self).items()
            if k != "seconds"
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(**{**data, "out": Path(data["out"]), "variants": tuple(data["variants"])})


# -- reading the run folder ----------------------------------------------------------------------------------------
def eval_env(plan: Plan, max_turns: int | None = None):
    from agents.actguide.config import ActGuideConfig
    from agents.actguide.tasks import make_env, sample_tasks

    config = ActGuideConfig(**plan.setting)
    overrides = {"max_turns": max_turns} if max_turns else {}
    env = make_env(config, split=plan.eval_split, **overrides)
    return env, sample_tasks(env, plan.eval_tasks_per_benchmark, 0)


def episode_file(plan: Plan, label: str, max_turns: int | None) -> Path:
    return plan.out / "episodes" / (f"{label}.jsonl" if not max_turns else f"{label}@turns{max_turns}.jsonl")


def read_episodes(
    plan: Plan, ids: Sequence[str], label: str, seed: int, max_turns: int | None = None
) -> list[EpisodeRecord]:
    """The evaluation episodes of one trained learner (seed labels ``seed * 100 + rollout``) from its JSONL log."""
    expected = {(t, seed * 100 + r) for t in ids for r in range(plan.eval_rollouts)}
    path = episode_file(plan, label, max_turns)
    records = [r for r in EpisodeLog(path).records if (r.task_id, r.seed) in expected] if path.is_file() else []
    if {(r.task_id, r.seed) for r in records} != expected:
        raise SteerEnvsError(
            f"{path} holds {len(records)}/{len(expected)} of the page's episodes; rerun "
            f"`python -m benchmarks.harness.actguide_doc --out {plan.out}` to finish it"
        )
    return records


def read_records(plan: Plan, ids: Sequence[str]) -> dict[str, list[EpisodeRecord]]:
    """Every table's episodes, keyed as the generator's ``evaluate_all`` returns them."""
    records = {"base": [r for s in range(plan.seeds) for r in read_episodes(plan, ids, "base", s)]}
    for variant in plan.variants:
        records[variant] = [r for s in plan.seeds_of(variant) for r in read_episodes(plan, ids, variant, s)]
    for turns in TURN_BUDGETS:
        for label in ("base", *MAIN):
            records[f"{label}@{turns}"] = read_episodes(plan, ids, label, 0, turns)
    return records


def read_log(plan: Plan, key: str) -> list[dict]:
    variant, seed = key.split("/")
    path = plan.run_dir(variant, int(seed)) / "log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def read_barrier(plan: Plan):
    """The barrier diagnostics the generator cached in ``barrier.json`` (``None`` when not run yet)."""
    from agents.actguide.barrier import BarrierReport

    cache = plan.out / "barrier.json"
    if not cache.is_file():
        return None
    reports = []
    for row in json.loads(cache.read_text()):
        row.pop("fork_ratio", None)
        for key in ("prefix_pass", "prompt_pass", "B", "delta_logit"):
            row[key] = {int(k): v for k, v in row[key].items()}
        reports.append(BarrierReport(**row))
    return reports


def load(out: Path) -> dict[str, Any]:
    page = read_run_json(out / PAGE_FILE, f"python -m benchmarks.harness.actguide_doc --out {out}")
    plan = Plan.from_json(page["plan"])
    plan.seconds = read_times(out / "times.json")
    plan.seconds["train"] = sum(read_times(out / "train_times.json").values())
    reports = read_barrier(plan)
    if reports is None:
        raise SteerEnvsError(f"{out / 'barrier.json'} is missing; rerun the generator to finish the barrier step")
    env, ids = eval_env(plan)
    id_set = set(ids)
    bench_of = {t.id: t.benchmark for t in env.tasks}
    records = read_records(plan, ids)
    outr = out_region(records["base"])
    return {
        "page": page,
        "plan": plan,
        "commands": page["commands"],
        "records": records,
        "ids": list(ids),
        "bench_of": bench_of,
        "reports": reports,
        "outr": outr,
        "inr": id_set - outr,
        "benchmarks": [b for b in BENCHMARKS if any(t.benchmark == b for t in env.tasks if t.id in id_set)],
    }


# -- statistics (the harness's) and tables ---------------------------------------------------------------------------
def out_region(base: Sequence[EpisodeRecord]) -> set[str]:
    """Tasks on which the base policy's unguided Pass@8 is 0 (its first 8 rollouts, seed labels 0..7)."""
    solved: dict[str, bool] = defaultdict(bool)
    for r in base:
        if r.seed < 8:
            solved[r.task_id] |= r.em > 0
    return {t for t, ok in solved.items() if not ok}


def subset(records: Sequence[EpisodeRecord], tasks: set[str]) -> list[EpisodeRecord]:
    return [r for r in records if r.task_id in tasks]


def success(records: Sequence[EpisodeRecord], benchmarks: Sequence[str]) -> tuple[dict[str, float], float]:
    """Success (exact match, %) per benchmark and its macro mean (NaN without records)."""
    means = {b: 100.0 * v for b, v in benchmark_means(records, benchmarks, attr="em").items()}
    return means, float(np.mean(list(means.values()))) if means else float("nan")


def gain(method, reference, benchmarks) -> tuple[dict[str, Interval], Interval] | None:
    if not method or not reference:
        return None
    present = [b for b in benchmarks if any(r.benchmark == b for r in method)]
    return paired_gain(method, reference, present, attr="em")


def fmt(iv: Interval | None) -> str:
    return "–" if iv is None else f"{iv.mean:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}]"


def _cells(label: str, records, reference, benchmarks, tasks: set[str]) -> list[str]:
    sub = subset(records, tasks)
    means, avg = success(sub, benchmarks)
    g = gain(sub, subset(reference, tasks), benchmarks) if reference is not None else None
    cells = [label]
    for b in benchmarks:
        if b not in means:
            cells.append("–")
            continue
        gb = g[0].get(b) if g else None
        cells.append(f"{means[b]:.1f}" + (f" ({gb.mean:+.1f} [{gb.low:+.1f}, {gb.high:+.1f}])" if gb else ""))
    cells.append(f"**{avg:.1f}**" + (f" ({fmt(g[1])})" if g else ""))
    return cells


def success_table(rows: list[tuple[str, list, list | None]], benchmarks, tasks: set[str]) -> str:
    """Rows (label, records, reference or None) on ``tasks``: success per benchmark, in parentheses the paired gain
    over the reference, Avg the macro mean."""
    return markdown_table(
        ["Method", *(BENCHMARK_TITLES.get(b, b) for b in benchmarks), "Avg"],
        [_cells(label, recs, ref, benchmarks, tasks) for label, recs, ref in rows],
        ["---"] + ["---:"] * (len(benchmarks) + 1),
    )


# -- sections --------------------------------------------------------------------------------------------------------
def _seeds(n: int) -> str:
    return f"{n} training seed{'' if n == 1 else 's'}"


def _title(ctx: PageContext) -> str:
    plan = ctx.data["plan"]
    return (
        "# Results: ACTGUIDE-RL (learning a search policy past its barrier)\n\n"
        + template(
            "actguide_box",
            tasks=len(ctx.data["ids"]),
            split=plan.eval_split,
            rollouts=plan.eval_rollouts,
            seeds=_seeds(plan.seeds),
            ablation_seeds=_seeds(plan.ablation_seeds),
        )
        + f"Generated by `{ctx.data['page']['command']}` (resumable: finished training runs and evaluated episodes "
        f"are read back). Run folders under `{plan.out}`. Back to [the main results page](results.md).\n\n"
    )


def _walls(ctx: PageContext) -> list[float]:
    return [
        max((row.get("wall_s", 0.0) for row in read_log(ctx.data["plan"], key)), default=0.0)
        for key in ctx.data["commands"]
        if key != "base"
    ]


def _card(ctx: PageContext) -> str:
    from steer_envs.data.corpus import load_corpus

    d, plan = ctx.data, ctx.data["plan"]
    corpus = load_corpus()
    policy, bm25, slots = codefacts.admissible_policy(), codefacts.bm25(), codefacts.admissible_slots()
    walls = _walls(ctx)
    tasks_by_bench: dict[str, int] = defaultdict(int)
    for t in d["ids"]:
        tasks_by_bench[d["bench_of"][t]] += 1
    s = plan.seconds
    return "".join(
        [
            "## Setting card\n\n",
            f"- date {today()}, commit `{code_version()}`, {machine_line()} CPU, "
            f"torch threads 1 (every run on one core)\n",
            f"- env `steer_envs/GuidedSearch-v0`, discrete admissible set ({slots['max_queries']} query + "
            f"{slots['max_answers']} answer slots), max {plan.setting['max_turns']} turns, corpus "
            f"`{Path(corpus.path).name}` sha256 `{file_fingerprint(corpus.path)}` ({len(corpus)} passages), "
            f"retriever bm25s (k1 {bm25['k1']:g}, b {bm25['b']:g}), top-3 passages per search, "
            "reward: exact match of the answer\n",
            f"- learner: `AdmissiblePolicy` ({policy['mlp']} MLP over candidate features; hint followed with "
            f"probability λ, λ₀ = {policy['lambda0']:g}); action data: successful real rollouts first, "
            "else the task's gold structure\n",
            f"- training: RL pool of {plan.setting['tasks_per_benchmark']} train tasks per benchmark (fewer where a "
            f"benchmark has fewer), budget {plan.setting['budget']} rollouts per run (unguided, probes and guided "
            f"rollouts all count), {plan.setting['batch_tasks']} tasks x G={plan.setting['group_size']} per "
            f"iteration, {plan.seeds} training seeds for the main comparison and {plan.ablation_seeds} for each "
            f"ablation and noise level; base policy: zero RL for {plan.base['budget']} rollouts on train tasks outside "
            f"the RL pool (KL coefficient {plan.base['kl_coef']})\n",
            f"- evaluation: split `{plan.eval_split}`, {len(d['ids'])} tasks with action data ("
            + ", ".join(f"{BENCHMARK_TITLES[b]} {tasks_by_bench[b]}" for b in d["benchmarks"])
            + f"), {plan.eval_rollouts} unguided rollouts per task and training seed; success = exact match x100; "
            "intervals: paired 95% stratified bootstrap (2000 resamples, tasks within benchmarks, seeds averaged per "
            "task); Avg is the macro mean over benchmarks\n",
            f"- wall time of the regeneration (summed over resumed runs): training {wall(s.get('train', 0.0))}, "
            f"evaluation {wall(s.get('eval', 0.0))}, barrier {wall(s.get('barrier', 0.0))}, in all "
            f"{wall(sum(s.get(k, 0.0) for k in ('train', 'eval', 'barrier')))}; "
            f"one training run at this setting: at most {max(walls, default=0.0) / 60:.1f} min "
            f"(mean {np.mean(walls) / 60 if walls else 0.0:.1f} min) on one core of a 2-core machine\n",
        ]
    )


def _acceptance(ctx: PageContext) -> str:
    d = ctx.data
    records, outr, inr, benchmarks = d["records"], d["outr"], d["inr"], d["benchmarks"]
    zero, act = records["zero_rl"], records["actguide"]
    out_gain = gain(subset(act, outr), subset(zero, outr), benchmarks)
    in_gain = gain(subset(act, inr), subset(zero, inr), benchmarks)
    in_base = gain(subset(act, inr), subset(records["base"], inr), benchmarks)
    reports = d["reports"]
    fork = sum(r.fork_env_steps for r in reports) / max(1, sum(r.restart_env_steps for r in reports))
    walls = _walls(ctx)
    rows = [
        (
            "ACTGUIDE-RL beats zero RL on out-region tasks (paired interval above 0)",
            out_gain is not None and out_gain[1].low > 0,
            f"gain {fmt(out_gain[1]) if out_gain else '–'}",
        ),
        (
            "its in-region success does not fall (vs zero RL: interval not below 0)",
            in_gain is not None and in_gain[1].high >= 0,
            f"vs zero RL {fmt(in_gain[1]) if in_gain else '–'}; vs the base {fmt(in_base[1]) if in_base else '–'}",
        ),
        ("probes by fork spend fewer env steps than restarting", fork < 1, f"ratio {fork:.2f}"),
        (
            "one training run at the documented setting takes ≤ 10 minutes",
            max(walls, default=0) <= 600,
            f"longest {max(walls, default=0) / 60:.1f} min",
        ),
    ]
    return "\n## Acceptance, read off the tables below\n\n" + markdown_table(
        ["Point", "", "Measured"], [(name, "**met**" if ok else "**not met**", value) for name, ok, value in rows]
    )


def _dev_notes(ctx: PageContext) -> str:
    return "\n## Choices made on dev\n\n" + template(
        "actguide_dev_notes", lambda0=f"{codefacts.admissible_policy()['lambda0']:g}"
    )


def coverage_table(data) -> str:
    rows = [
        (BENCHMARK_TITLES[r["benchmark"]], r["tasks"], r["rollout"], r["gold"], r["any"], f"{r['mean_length']:.2f}")
        for r in data.coverage(list(BENCHMARKS))
    ]
    return markdown_table(
        ["Benchmark", "tasks", "from rollouts", "from gold structure", "any", "mean length"],
        rows,
        ["---"] + ["---:"] * 5,
    )


def _coverage(ctx: PageContext) -> str:
    from steer_envs.reference_plans import load_reference_plans

    return (
        "\n## Action data coverage\n\n`steer-envs reference-plans coverage --split all`\n\n"
        + coverage_table(load_reference_plans(None, None))
        + "\n"
    )


def _regions(ctx: PageContext) -> str:
    d = ctx.data
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for t in d["ids"]:
        counts[d["bench_of"][t]][0 if t in d["outr"] else 1] += 1
    benchmarks = d["benchmarks"]
    return (
        "\n## The barrier: out-region test tasks\n\n"
        + template("actguide_barrier_intro")
        + markdown_table(
            ["", *(BENCHMARK_TITLES[b] for b in benchmarks), "All"],
            [
                ["out-region", *(counts[b][0] for b in benchmarks), len(d["outr"])],
                ["in-region", *(counts[b][1] for b in benchmarks), len(d["inr"])],
            ],
            ["---"] + ["---:"] * (len(benchmarks) + 1),
        )
    )


def _main_result(ctx: PageContext) -> str:
    d, plan = ctx.data, ctx.data["plan"]
    records, benchmarks, outr, inr = d["records"], d["benchmarks"], d["outr"], d["inr"]
    zero, act = records["zero_rl"], records["actguide"]
    rows = [("base (initial policy)", records["base"], None), ("zero RL", zero, None), ("ACTGUIDE-RL", act, zero)]
    return (
        "\n## Main result: ACTGUIDE-RL vs zero RL, equal rollout budgets, evaluated without a hint\n\n"
        "```bash\n" + "\n".join(d["commands"][f"{v}/{s}"] for v in MAIN for s in range(plan.seeds)) + "\n```\n\n"
        "Out-region tasks: success (%); in parentheses the paired gain over zero RL with its 95% interval.\n\n"
        + success_table(rows, benchmarks, outr)
        + "\nIn-region tasks: success (%); in parentheses the paired gain over zero RL.\n\n"
        + success_table(rows, benchmarks, inr)
        + "\nIn-region, ACTGUIDE-RL against the base policy it started from: "
        + fmt(gain(subset(act, inr), subset(records["base"], inr), benchmarks)[1])
        + " (paired gain, points).\n"
    )


def training_table(plan: Plan) -> str:
    """Per method, means over its training seeds: iterations the budget paid for, where the rollouts went, how
    many hard groups guidance rescued, and how far the policy moved from the base (the KL term's estimate)."""
    rows = []
    for variant in plan.variants:
        logs = [log for log in (read_log(plan, f"{variant}/{s}") for s in plan.seeds_of(variant)) if log]
        if not logs:
            continue
        its = np.mean([len(log) for log in logs])
        total = np.mean([sum(r["rollouts"] for r in log) for log in logs])
        probes = np.mean([sum(r["probe_rollouts"] for r in log) for log in logs])
        guided = np.mean([sum(r["guided_groups"] for r in log) for log in logs]) * plan.setting["group_size"]
        hard = np.mean([np.mean([r["hard_groups"] for r in log]) for log in logs])
        rescued = sum(sum(r["rescued_groups"] for r in log) for log in logs)
        groups = sum(sum(r["guided_groups"] for r in log) for log in logs)
        kl = np.mean([log[-1]["loss_kl"] for log in logs])
        rows.append(
            (
                variant,
                f"{its:.0f}",
                f"{probes / total:.0%}",
                f"{guided / total:.0%}",
                f"{hard:.1f} of {plan.setting['batch_tasks']}",
                f"{rescued / groups if groups else 0:.0%}",
                f"{kl:.2f}",
            )
        )
    return (
        "Means over training seeds. Rescued: guided groups with at least one success. KL: the k3 estimate of "
        "KL(π_θ ‖ base) in the last iteration.\n\n"
        + markdown_table(
            [
                "Method",
                "iterations",
                "rollouts on probes",
                "on guided groups",
                "hard groups / iteration",
                "rescued / guided groups",
                "KL to base (last)",
            ],
            rows,
            ["---"] + ["---:"] * 6,
        )
    )


def _ablation_reference(ctx: PageContext) -> list[EpisodeRecord]:
    """ACTGUIDE-RL's episodes of the training seeds the ablations also have (so the two are paired)."""
    return [r for r in ctx.data["records"]["actguide"] if r.seed // 100 < ctx.data["plan"].ablation_seeds]


def _ablations(ctx: PageContext) -> str:
    d, plan = ctx.data, ctx.data["plan"]
    act_ab = _ablation_reference(ctx)
    return (
        "\n## Ablations: each removal, at the same budget\n\n"
        "```bash\n"
        + "\n".join(d["commands"][f"{v}/0"] for v in ABLATIONS)
        + (f"\n# (and --seed 1..{plan.ablation_seeds - 1})" if plan.ablation_seeds > 1 else "")
        + "\n```\n\n"
        + template("actguide_ablations")
        + success_table(
            [("ACTGUIDE-RL", act_ab, None)] + [(v, d["records"][v], act_ab) for v in ABLATIONS],
            d["benchmarks"],
            d["outr"],
        )
    )


def _noise(ctx: PageContext) -> str:
    d = ctx.data
    act_ab = _ablation_reference(ctx)
    return (
        "\n## Noisy guidance\n\n```bash\n"
        + "\n".join(d["commands"][f"{v}/0"] for v in NOISE)
        + "\n```\n\n"
        + template("actguide_noise")
        + success_table(
            [
                ("clean", act_ab, None),
                ("10% noise", d["records"]["noise_10"], act_ab),
                ("20% noise", d["records"]["noise_20"], act_ab),
            ],
            d["benchmarks"],
            d["outr"],
        )
    )


def budget_plot(curve: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, name in zip(axes, ("out-region", "all")):
        for label in ("base", *MAIN):
            ax.plot(TURN_BUDGETS, curve[(label, name)], marker="o", label=label)
        ax.set(xlabel="turn budget at evaluation", ylabel="success (%)", title=f"{name} test tasks")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _budget_curve(ctx: PageContext) -> str:
    d = ctx.data
    curve, rows = {}, []
    for label in ("base", *MAIN):
        for name, tasks in (("out-region", d["outr"]), ("all", set(d["ids"]))):
            vals = [success(subset(d["records"][f"{label}@{t}"], tasks), d["benchmarks"])[1] for t in TURN_BUDGETS]
            curve[(label, name)] = vals
            rows.append((label, name, *(f"{v:.1f}" for v in vals)))
    plot = budget_plot(curve, ctx.doc.parent / "results" / "actguide_budget.png")
    return (
        "\n## Budget curve: success as the interaction budget at evaluation grows\n\n"
        + template("actguide_budget_intro", train_turns=d["plan"].setting["max_turns"])
        + markdown_table(
            ["Policy", "tasks", *(f"T={t}" for t in TURN_BUDGETS)], rows, ["---", "---"] + ["---:"] * len(TURN_BUDGETS)
        )
        + f"\n![budget curve](results/{plot.name})\n"
    )


def _barrier(ctx: PageContext) -> str:
    from agents.actguide.barrier import barrier_plot, barrier_table

    plan, reports = ctx.data["plan"], ctx.data["reports"]
    barrier_plot(reports, ctx.doc.parent / "results" / "actguide_barrier.png")
    return (
        "\n## Barrier diagnostics: the initial and the trained policy\n\n"
        f"`steer-envs barrier --model {plan.base_dir} {plan.run_dir('actguide', 0)} --split {plan.eval_split} "
        f"--tasks-per-benchmark {plan.barrier_tasks_per_benchmark}` (K = 8, k = 0..4, t = 0..4).\n\n"
        + barrier_table(reports)
        + "\n\n![barrier](results/actguide_barrier.png)\n"
    )


def probe_costs(plan: Plan, reports) -> dict[str, tuple[int, int]]:
    out = {
        "barrier diagnostics (prefix-level Pass@K, both policies)": (
            sum(r.fork_env_steps for r in reports),
            sum(r.restart_env_steps for r in reports),
        )
    }
    fork = restart = 0
    for seed in plan.seeds_of("prefix"):
        for row in read_log(plan, f"prefix/{seed}"):
            fork += row.get("probe_env_steps", 0)
            restart += row.get("probe_restart_env_steps", 0)
    if restart:
        out["training in prefix mode (`prefix` variant, all seeds)"] = (fork, restart)
    return out


def _probes(ctx: PageContext) -> str:
    rows = [
        (name, fork, restart, f"{fork / max(1, restart):.2f}")
        for name, (fork, restart) in probe_costs(ctx.data["plan"], ctx.data["reports"]).items()
    ]
    return (
        "\n## Probes by fork\n\n"
        + template("actguide_probes")
        + markdown_table(
            ["Where", "env steps by fork", "env steps restarting from the prompt", "ratio"],
            rows,
            ["---", "---:", "---:", "---:"],
        )
    )


def _training(ctx: PageContext) -> str:
    return "\n## Where the budget went (training logs)\n\n" + training_table(ctx.data["plan"])


PAGE = Page(
    name="results_actguide",
    help="ACTGUIDE-RL against zero RL, ablations, noisy guidance, budget curve, barrier",
    doc="docs/results_actguide.md",
    out="runs/actguide",
    load=load,
    sections=page_sections(
        _title,
        _card,
        _acceptance,
        _dev_notes,
        _coverage,
        _regions,
        _main_result,
        _training,
        _ablations,
        _noise,
        _budget_curve,
        _barrier,
        _probes,
        template_section("causal LM", "actguide_causal_lm"),
    ),
)
