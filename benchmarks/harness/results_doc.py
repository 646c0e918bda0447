"""Regenerate ``docs/results.md``: run the documented commands, then write the page from their run folders.

Every table in the page is read back from the run folder its command wrote, and the page shows that command
verbatim, so the page can only say what the commands produced. Run folders resume, so an interrupted
regeneration continues where it stopped. Usage::

    python -m benchmarks.harness.results_doc                      # full: test split, 3 seeds (see --help)
    python -m benchmarks.harness.results_doc --limit 3 --seeds 1  # a small dry run of the same pipeline
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from steer_envs.cli.main import main as cli_main
from steer_envs.paths import REPO_ROOT

#: τ of the RL steerer in the main table: the dev-calibrated value for ~1 intervention per task of the F4 acceptance
#: run (docs/steering_learning.md); τ is a deployment knob, the τ sweep below shows the whole trade-off
RL_TAU = "0.0167"
MAIN_METHODS = (
    "no_supervision", f"steering_rl:tau={RL_TAU}", "random", "always", "drift_rule", "steering_zero_shot", "planning_zero_shot",
    "planning_rl", "verification_zero_shot", "verification_rl", "filtered_bc", "sb3_ppo",
)
#: row order of the main table (the paper's: reference, rules, zero-shot forms, learned forms, steering last)
ROW_ORDER = (
    "no_supervision", "random", "always", "drift_rule", "steering_zero_shot", "planning_zero_shot",
    "verification_zero_shot", "filtered_bc", "sb3_ppo", "planning_rl", "verification_rl", "steering_rl",
)
TAUS = ("0.002", "0.005", RL_TAU, "0.05", "0.15", "0.5")
TRANSFER_METHODS = ("steering_rl", "steering_zero_shot", "drift_rule")
SIM_EXECUTORS = ("sim:default", "sim:weak", "sim:strong", "sim:loopy")


@dataclass
class Step:
    title: str
    argv: list[str]
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def wall(self) -> str:
        return f"{self.seconds:.0f} s" if self.seconds < 120 else f"{self.seconds / 60:.1f} min"

    @property
    def command(self) -> str:
        return "steer-envs " + " ".join(shlex.quote(a) for a in self.argv)


def _protocol(limit: int, seeds: int) -> list[str]:
    out = ["--split", "test", "--seeds", str(seeds)]
    return out + (["--limit", str(limit)] if limit else [])


def plan(out: Path, limit: int, seeds: int, llm_limit: int, llm_executor_limit: int,
         transfer_seeds: int = 1) -> dict[str, Step]:
    proto = _protocol(limit, seeds)
    steps = {
        "main": Step("Main table: every method on sim:default, test split",
                     ["eval", "--method", *MAIN_METHODS, "--executor", "sim:default", *proto, "--out", str(out / "main")]),
        "tau": Step("τ sweep of the RL-trained steerer (same run folder: τ is a deployment knob, no retraining)",
                    ["sweep", "tau", "--method", "steering_rl", "--taus", *TAUS, "--executor", "sim:default", *proto,
                     "--out", str(out / "main")]),
        "transfer": Step("Transfer: trained on sim:default, evaluated unchanged on other simulator profiles",
                         ["sweep", "transfer", "--method", *TRANSFER_METHODS, "--train-executor", "sim:default",
                          "--executors", *SIM_EXECUTORS, *_protocol(limit, transfer_seeds),
                          "--out", str(out / "transfer")]),
    }
    if llm_limit:
        steps["llm_steerer"] = Step(
            "Zero-shot steering with a causal LM steerer (gemma-3-270m), test subset",
            ["eval", "--method", "no_supervision", "steering_llm_zero_shot", "--executor", "sim:default",
             "--split", "test", "--seeds", "1", "--limit", str(llm_limit), "--out", str(out / "llm_steerer")])
    if llm_executor_limit:
        steps["llm_executor"] = Step(
            "Transfer to a real LLM executor (gemma-3-270m through transformers), test subset",
            ["sweep", "transfer", "--method", "steering_rl", "drift_rule", "--train-executor", "sim:default",
             "--executors", "hf:gemma-3-270m", "--split", "test", "--seeds", "1", "--limit", str(llm_executor_limit),
             "--out", str(out / "llm_executor")])
    return steps


def reuse_main_training(out: Path) -> None:
    """Give the transfer sweep the main run's trained checkpoints (training is deterministic given its options, so
    this is the model the sweep would train again, minus ~15 minutes)."""
    from .sweeps import executor_dirname

    source = out / "main" / "checkpoints"
    target = out / "transfer" / executor_dirname("sim:default") / "checkpoints"
    for checkpoint in sorted(source.iterdir()) if source.is_dir() else ():
        if not (target / checkpoint.name).exists():
            shutil.copytree(checkpoint, target / checkpoint.name)


WALL_TIMES = "wall_times.json"


def run_steps(steps: dict[str, Step], out: Path) -> None:
    """Run each step; a step's wall time adds up over resumed runs (kept in ``out/wall_times.json``), so a
    regeneration that only reads finished episodes back still reports what the command cost."""
    times_path = out / WALL_TIMES
    times = json.loads(times_path.read_text(encoding="utf-8")) if times_path.is_file() else {}
    for key, step in steps.items():
        if key == "transfer":
            reuse_main_training(out)
        print(f"\n=== {step.title}\n$ {step.command}", flush=True)
        start = time.perf_counter()
        code = cli_main(step.argv)
        elapsed = time.perf_counter() - start
        if code != 0:
            raise SystemExit(f"step {key!r} failed with exit code {code}: {step.command}")
        times[step.command] = times.get(step.command, 0.0) + elapsed
        step.seconds = times[step.command]
        out.mkdir(parents=True, exist_ok=True)
        times_path.write_text(json.dumps(times, indent=2) + "\n", encoding="utf-8")
        print(f"=== done in {elapsed:.0f}s ({step.seconds:.0f}s in all runs of this command)", flush=True)


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _main_table(run: Path) -> str:
    from .runfolder import RunFolder
    from .runner import REFERENCE, complete_methods, incomplete_notes, table_header
    from .stats import summarize
    from .tables import results_table

    folder = RunFolder(run)
    complete, _ = complete_methods(folder)
    # τ-sweep rows live in the same folder; the main table keeps the main command's own labels
    rows = {label: recs for label, recs in complete.items() if "tau=" not in label or label in MAIN_METHODS}
    ordered = sorted(rows, key=lambda lab: ROW_ORDER.index(lab.split(":")[0]) if lab.split(":")[0] in ROW_ORDER else 99)
    ordered.remove(REFERENCE)
    summaries = summarize({REFERENCE: rows[REFERENCE], **{k: rows[k] for k in ordered}}, folder.config.benchmarks)
    return table_header(folder.config) + results_table(summaries, folder.config.benchmarks) + incomplete_notes(folder)


def _copy_plot(src: Path, docs: Path, name: str) -> str | None:
    if not src.is_file():
        return None
    target = docs / "results"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target / name)
    return f"results/{name}"


def write_page(steps: dict[str, Step], out: Path, doc: Path, limit: int, seeds: int) -> Path:
    from .report import write_report

    docs = doc.parent
    lines = [
        "# Results\n\n",
        "Generated by `python -m benchmarks.harness.results_doc"
        + (f" --limit {limit}" if limit else "") + (f" --seeds {seeds}" if seeds != 3 else "") + "`, which runs the "
        "commands shown below (each resumable: rerunning skips finished episodes) and reads every table back from "
        f"the run folders they wrote (under `{out}`).\n\n",
        f"- date: {_dt.date.today().isoformat()}, commit `{_commit()}`, Python {platform.python_version()}, "
        f"{platform.machine()} CPU, torch threads 1\n",
        "- scores: F1 x100 of the executor's final answer (ASearcher normalisation); intervals: paired 95% "
        "stratified bootstrap against no supervision (tasks resampled within each benchmark, seeds averaged per "
        "task, 2000 resamples); every row ran on the same tasks and seeds (the harness refuses anything else)\n",
        "- learning methods train on the *train* split of the same executor; `random` intervenes at the "
        "measured per-decision rate of `steering_rl` in the same run folder; `planning_rl` and `verification_rl` "
        "train with a smaller budget (m=16, k=64, N=8) than `steering_rl` (m=40, k=128, N=16), because each of "
        "their continuations is a whole episode (`steer-envs eval --list-methods` shows every option)\n",
        "- ACTGUIDE-RL (the learning search agent, `GuidedSearch-v0`) has its own page, "
        "[results_actguide.md](results_actguide.md), regenerated by `python -m benchmarks.harness.actguide_doc`\n",
    ]
    write_report(out / "main")
    main = steps["main"]
    lines += [f"\n## {main.title}\n\n```bash\n{main.command}\n```\n\nWall time: {main.wall}.\n\n",
              _main_table(out / "main")]
    plot = _copy_plot(out / "main" / "plots" / "methods.png", docs, "methods.png")
    if plot:
        lines.append(f"\n![F1 by method]({plot})\n")
    tau = steps["tau"]
    lines += [f"\n## {tau.title}\n\n```bash\n{tau.command}\n```\n\nWall time: {tau.wall} "
              "(training reused from the main run).\n\n", (out / "main" / "tau_sweep.md").read_text(encoding="utf-8")]
    for png in sorted((out / "main" / "plots").glob("tau_*.png")):
        plot = _copy_plot(png, docs, "tau_sweep.png")
        lines.append(f"\n![τ sweep]({plot})\n")
        break
    tr = steps["transfer"]
    write_report(out / "transfer")
    lines += [f"\n## {tr.title}\n\n```bash\n{tr.command}\n```\n\nWall time: {tr.wall}. Each executor "
              "has its own run folder, so each row is paired within its executor. The trained methods reuse the main run's "
              "checkpoints (copied into the sweep's source folder; training is deterministic, so run alone the "
              "command trains the same model again).\n\n",
              (out / "transfer" / "transfer.md").read_text(encoding="utf-8")]
    plot = _copy_plot(out / "transfer" / "plots" / "transfer.png", docs, "transfer.png")
    if plot:
        lines.append(f"\n![transfer]({plot})\n")
    if "llm_steerer" in steps:
        st = steps["llm_steerer"]
        write_report(out / "llm_steerer")
        table = (out / "llm_steerer" / "table.md").read_text(encoding="utf-8")
        lines += [f"\n## {st.title}\n\n```bash\n{st.command}\n```\n\nWall time: {st.wall} (the "
                  "steerer is a 270M-parameter LM on 2 CPU cores, hence the subset).\n\n", table]
    if "llm_executor" in steps:
        st = steps["llm_executor"]
        lines += [f"\n## {st.title}\n\n```bash\n{st.command}\n```\n\nWall time: {st.wall}.\n\n",
                  (out / "llm_executor" / "transfer.md").read_text(encoding="utf-8")]
    lines.append(
        "\n## Executors not in the tables\n\n`replay:` executors replay recorded rollouts read-only: they cannot "
        "receive an intervention, so only `no_supervision` can run on them and there is no supervised row to "
        "compare. `openai:` / `llamacpp:` executors run with the same `sweep transfer` command given a server or "
        "a GGUF file (`--executors openai:MODEL@URL`).\n")
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("".join(lines), encoding="utf-8")
    (out / "results_steps.json").write_text(json.dumps(
        {k: {"command": s.command, "seconds": round(s.seconds, 1)} for k, s in steps.items()}, indent=2) + "\n")
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/results", help="parent of the run folders (default runs/results)")
    parser.add_argument("--doc", default=str(REPO_ROOT / "docs" / "results.md"))
    parser.add_argument("--limit", type=int, default=0, help="tasks per benchmark (default 0: the whole test split)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per task for the main table and the τ sweep")
    parser.add_argument("--transfer-seeds", type=int, default=1,
                        help="seeds per task for the transfer table (4 executors x 3 methods; default 1)")
    parser.add_argument("--llm-limit", type=int, default=1,
                        help="test tasks per benchmark for the gemma steerer section (0: skip)")
    parser.add_argument("--llm-executor-limit", type=int, default=0,
                        help="test tasks per benchmark for the gemma executor section (0: skip; slow)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    steps = plan(out, args.limit, args.seeds, args.llm_limit, args.llm_executor_limit, args.transfer_seeds)
    run_steps(steps, out)
    doc = write_page(steps, out, Path(args.doc), args.limit, args.seeds)
    print(f"\nwrote {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
