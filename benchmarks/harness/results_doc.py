"""Regenerate ``docs/results.md``: the rate-matched comparison on three executor profiles, and zero-shot steering.

For each profile (each trained on its own profile) it runs :class:`~.comparison.Comparison` on the **test**
split: every knob chosen on dev, every learned method trained with several seeds, filtered BC and SB3 PPO at the
RL steerer's measured budget, intervals over tasks and training seeds. Then the paper's zero-shot steerer (a
prompted causal LM, ``steering_llm_zero_shot``) on a test subset of at least 20 tasks per benchmark, paired with
the main rows on the same tasks. Every step resumes (run folders, checkpoints, dev choices), so an interrupted
regeneration continues where it stopped; the page is written from the run folders only. Nothing here chooses a
value on test: the RL steerer's configuration is a parameter (``--rl``), chosen beforehand on dev.

Usage::

    python -m benchmarks.harness.results_doc --rl steering_rl:config=configs/steering_rl.toml   # the full page
    python -m benchmarks.harness.results_doc --limit 2 --dev-limit 2 --seeds 1 --train-seeds 2 \\
        --rl steering_rl:G=2,N=2,bank_tasks=16,k=4,m=2 --llm-limit 0 --doc /tmp/results.md         # a dry run
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from steer_envs.paths import REPO_ROOT

from .comparison import RL, RULE, UNTRAINED, Comparison, ComparisonPlan, Row
from .operating import choose_rate
from .provenance import code_version
from .runner import REFERENCE
from .setting import folder_line, setting_card
from .stats import MethodSummary
from .sweeps import executor_dirname, with_option
from .tables import closing_line, comparison_table, display_name, pairwise_table

PROFILES = ("sim:default", "sim:r1searcher", "sim:loopy")
LLM = "steering_llm_zero_shot"
#: rows shown beside the rate-matched ones without a knob: the fixed rule the earlier page reported (verify at the
#: first decision) and the oracle's headroom (it reads hidden state, so it is never marked best)
CONTEXT_ROWS = ("fixed_rule:option=verify,at=1", "oracle")
#: the acceptance setting; anything smaller makes the page say it is a dry run
FULL = {"limit": 0, "seeds": 3, "train_seeds": 3, "min_llm_limit": 20}
#: measured on the shared 2-core machine (one core, other jobs running), gemma-3-270m through transformers, fp32:
#: one fast-path forward pass 3.5 s CPU, one slow-path sample 43 s CPU; an episode at ~1 intervention per task
#: (~2.8 decisions) therefore costs ~50 s of one core
GEMMA_NOTE = ("gemma-3-270m on one CPU core: ~3.5 s per fast-path pass and ~43 s per slow-path sample (measured "
              "with other jobs running), so ~50 s per episode at ~1 intervention/task")


def profile_plan(args: argparse.Namespace, executor: str) -> ComparisonPlan:
    from benchmarks.cli import compare_plan

    return compare_plan(args, Path(args.out) / executor_dirname(executor), executor=executor)


def llm_section(args: argparse.Namespace, main: Comparison) -> str:
    """The prompted LLM steerer next to the main rows, on the first ``llm_limit`` test tasks per benchmark."""
    p = main.plan
    llm_plan = replace(p, out=Path(args.out) / "llm", limit=args.llm_limit, seeds=1, dev_limit=args.llm_dev_limit,
                       dev_seeds=1, max_probes=args.llm_probes, curves=False, spearman_tasks=0,
                       checkpoints=main.checkpoints)
    cmp = Comparison(llm_plan)
    llm = with_option(LLM, "model", args.llm_model)
    choice = choose_rate(cmp.dev, llm, p.target, p.tolerance, args.llm_probes, progress=p.progress)
    rows = {name: main.rows[name] for name in (REFERENCE, RULE, UNTRAINED, RL) if name in main.rows}
    rows[LLM] = Row(LLM, [choice.label], f"tau={choice.value} (dev rate {choice.dev_rate:.2f} on "
                                         f"{args.llm_dev_limit} dev tasks per benchmark)")
    cmp.rows = rows
    cmp.evaluate_rows()
    summaries, boot = cmp.summaries()
    pairs = {(LLM, name): boot.gain(LLM, name)[1] for name in rows if name != LLM}
    card = setting_card(cmp.report, p.train_seeds, (cmp.dev,))
    knobs = {name: row.knob for name, row in rows.items()}
    return "".join([
        f"## Zero-shot steering with a prompted LLM ({args.llm_model})\n\n", card.markdown(), "\n",
        f"The paper's zero-shot row: the steering agent on a causal LM, prompted, not trained ({GEMMA_NOTE}; hence "
        f"{args.llm_limit} test tasks per benchmark, 1 evaluation seed). Its τ was set on {args.llm_dev_limit} dev "
        "tasks per benchmark to ~1 intervention/task; the other rows are the main comparison's, with their dev "
        "choices, on the same tasks and seeds (paired).\n\n",
        comparison_table(summaries, cmp.report.config.benchmarks, {}, knobs), "\n",
        pairwise_table([(a, b, i) for (a, b), i in pairs.items()]), "\n",
        _llm_verdict(summaries, pairs)])


def _llm_verdict(summaries: list[MethodSummary], pairs) -> str:
    llm = next(s for s in summaries if s.method == LLM)
    text = (f"**Verdict:** the zero-shot LLM steerer changes F1 by {llm.avg_gain.mean:+.2f} "
            f"[{llm.avg_gain.low:+.2f}, {llm.avg_gain.high:+.2f}] over no supervision at "
            f"{llm.interventions_per_task:.2f} interventions/task")
    if (LLM, RL) in pairs:
        gap = pairs[(LLM, RL)]
        text += (f"; against {display_name(RL)} on the same tasks: {gap.mean:+.2f} [{gap.low:+.2f}, {gap.high:+.2f}]")
    return text + ".\n"


def is_dry_run(args: argparse.Namespace) -> bool:
    """Fewer evaluation or training seeds than the acceptance setting, another split, or too few LLM tasks: the
    numbers only exercise the pipeline. A task subset at full seeds is a result on that subset (see is_subset)."""
    return (args.seeds < FULL["seeds"] or args.train_seeds < FULL["train_seeds"] or args.split != "test"
            or 0 < args.llm_limit < FULL["min_llm_limit"])


def is_subset(args: argparse.Namespace) -> bool:
    return args.limit != FULL["limit"]


def write_page(args: argparse.Namespace, sections: dict[str, str], folders: list[Path], doc: Path) -> Path:
    command = "python -m benchmarks.harness.results_doc " + " ".join(shlex.quote(a) for a in args.argv)
    dry = is_dry_run(args)
    lines = ["# Results\n\n"]
    if dry:
        lines.append("> **Dry run** (smaller than the acceptance setting: all test tasks, 3 evaluation seeds, 3 training "
                     "seeds, ≥ 20 tasks per benchmark for the LLM steerer). These numbers test the pipeline; they are "
                     "not results.\n\n")
    elif is_subset(args):
        lines.append(f"> **Test subset**: the first {args.limit} test tasks of each benchmark, not the whole split "
                     "(the acceptance setting); seeds as in the acceptance setting. Intervals are over these tasks.\n\n")
    lines += [
        f"Generated by `{command}` on {_dt.date.today().isoformat()} (code `{code_version()}`, Python "
        f"{platform.python_version()}, {platform.machine()}). Every step resumes; every table is read back from the "
        f"run folders listed at the end (under `{args.out}`).\n\n",
        "**Protocol.** Dev for choosing, test once: every operating point (τ of each steerer and of filtered BC, p of "
        "random, SB3 PPO's intervention cost, the best fixed rule's note and decision) was chosen on the **dev** "
        f"split, to ~{args.target:g} intervention per task; the test split was run for the reported numbers only. "
        f"Every learned method was trained {args.train_seeds} times (training seeds); a row averages its training "
        "runs and its interval resamples tasks within benchmarks *and* training seeds (evaluation seeds averaged per "
        "task first). Filtered BC and SB3 PPO get the RL steerer's measured training budget in env steps "
        "(counterfactual continuations included), ±10%. **Avg F1 is the macro mean over benchmarks** everywhere "
        "(each benchmark's mean over its tasks, then the plain mean of the seven), as in the paper's tables.\n\n",
        f"The RL steerer's configuration: `{args.rl}` (chosen on dev beforehand; see "
        "[steering_learning.md](steering_learning.md)). ACTGUIDE-RL has its own page: "
        "[results_actguide.md](results_actguide.md) (`python -m benchmarks.harness.actguide_doc`); hand-off steering "
        "(`HandoffSteering-v0`): [results_handoff.md](results_handoff.md) (`python -m benchmarks.handoff_results`); "
        "the testbed's own checks (leak test, note reading, calibration, headroom, sensitivity): "
        "[results_testbed.md](results_testbed.md).\n\n",
    ]
    for text in sections.values():
        lines += [text, "\n"]
    lines.append("\n## Run folders (split evaluated, code version)\n\n")
    lines += [f"- {folder_line(f)}\n" for f in folders if (f / "config.json").is_file()]
    lines.append(
        "\n## Executors not in the tables\n\n`replay:` executors replay recorded rollouts read-only: they cannot "
        "receive an intervention, so only `no_supervision` can run on them. `hf:` / `openai:` / `llamacpp:` "
        "executors run with the same commands (`steer-envs compare --executor SPEC`); on a CPU an LLM executor is "
        "too slow for the full protocol.\n")
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("".join(lines), encoding="utf-8")
    return doc


def _copy_plot(cmp: Comparison, doc: Path, text: str) -> str:
    """Copy a comparison's rate-curve plot next to the page and point its markdown link there."""
    import shutil

    src = cmp.plan.out / "plots" / "rate_curves.png"
    if not src.is_file():
        return text
    target = doc.parent / "results" / f"rate_curves_{executor_dirname(cmp.plan.executor)}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target)
    return text.replace("](plots/rate_curves.png)", f"](results/{target.name})")


def main(argv: list[str] | None = None) -> int:
    from benchmarks.cli import _add_protocol, add_compare_arguments
    from steer_envs.rollouts import add_pool_arguments

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/results", help="parent of the run folders (default runs/results)")
    parser.add_argument("--doc", default=str(REPO_ROOT / "docs" / "results.md"))
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES),
                        help=f"executors, each trained and compared on its own (default {' '.join(PROFILES)})")
    parser.add_argument("--llm-limit", type=int, default=20,
                        help="test tasks per benchmark for the zero-shot LLM steerer (0: no LLM section; < 20 makes "
                             "the page a dry run)")
    parser.add_argument("--llm-dev-limit", type=int, default=2, help="dev tasks per benchmark to set its τ (default 2)")
    parser.add_argument("--llm-probes", type=int, default=5, help="dev evaluations of its τ bisection (default 5)")
    parser.add_argument("--llm-model", default="hf:gemma-3-270m", help="the LLM steerer's model (hf:... or openai:...)")
    add_compare_arguments(parser)
    parser.set_defaults(context_rows=list(CONTEXT_ROWS))
    _add_protocol(parser, split="test")
    add_pool_arguments(parser)
    args = parser.parse_args(argv)
    args.argv = argv
    doc = Path(args.doc)
    sections: dict[str, str] = {}
    folders: list[Path] = []
    comparisons = {}
    for executor in args.profiles:
        cmp = Comparison(profile_plan(args, executor))
        print(f"\n=== {executor}: {cmp.plan.out}", flush=True)
        cmp.run()
        comparisons[executor] = cmp
        sections[executor] = _copy_plot(cmp, doc, (cmp.plan.out / "comparison.md").read_text(encoding="utf-8"))
        folders += [cmp.dev.root, cmp.report.root] + ([cmp.curves.root] if cmp.plan.curves else [])
    if args.llm_limit:
        main_cmp = comparisons.get("sim:default") or next(iter(comparisons.values()))
        print(f"\n=== zero-shot LLM steerer ({args.llm_model})", flush=True)
        sections["llm"] = llm_section(args, main_cmp)
        folders += [Path(args.out) / "llm" / "dev", Path(args.out) / "llm" / args.split]
    (Path(args.out) / "results_sections.json").write_text(json.dumps(sections, indent=2) + "\n", encoding="utf-8")
    write_page(args, sections, folders, doc)
    print(f"\nwrote {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
