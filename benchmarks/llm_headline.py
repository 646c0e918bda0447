"""The headline comparison with a real LLM steerer: ``python -m benchmarks.llm_headline --out DIR``.

The method's claim is a zero-shot LLM steerer against the *same LLM* trained by the suite's steering trainer, both at
about one intervention per task, on the same test tasks. This command runs exactly that through the main harness
(:mod:`benchmarks.harness`), with the simulated executor (``sim:default``) acting:

1. **no supervision** on the test tasks and seeds (the reference row);
2. **training**: the steering trainer (ranking loss + GRPO, :class:`~agents.steering.trainer.SteeringTrainer`) on the
   train split with ``backbone = "causal_lm"`` and LoRA on the model folder; it writes a peft adapter (``adapter/``);
3. **serving**: one vLLM server (:class:`~steer_envs.llm.vllm_engine.VLLMServer`) with the base model and the trained
   adapter beside it (``--lora-modules steerer=RUN/adapter``); both LLM rows go through the same served-steerer path
   (``steering_zero_shot:model=openai:NAME@URL``), the trained row naming the adapter;
4. **dev matching**: each LLM row's gate threshold τ bisected on dev until it intervenes about ``--target`` times per
   task (:func:`benchmarks.harness.operating.choose_rate`);
5. **test**: both rows at their dev τ on the test tasks and seeds of row 1;
6. the report: F1 (macro over benchmarks), paired 95% intervals from the harness's bootstrap
   (:class:`~benchmarks.harness.stats.HierarchicalBootstrap`), the setting card, the wall time of every part.

Everything lives in the run folder ``OUT`` and a rerun resumes: finished episodes, the trained adapter and the dev
choices are kept, and the server is started on the port the first invocation chose (the served model's URL is part
of the method labels). Partial results are written after every part (``OUT/llm_headline.json``: the rows that
finished, the parts still to run), and the page (:mod:`benchmarks.pages.llm_headline`) is rebuilt from that file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from steer_envs.atomic import atomic_write_bytes, atomic_write_json
from steer_envs.cli.common import add_protocol_arguments
from steer_envs.errors import SteerEnvsError

#: the run folder's report (rows, intervals, card, wall times), what the page renders
REPORT_FILE = "llm_headline.json"
#: what the first invocation chose and later ones must reuse (the server's port is in the method labels)
STATE_FILE = "state.json"
TIMINGS_FILE = "timings.json"
ADAPTER_NAME = "steerer"
BASE_NAME = "base"
REFERENCE = "no_supervision"
RESAMPLES = 2000
#: row key -> (row name on the page, served model name)
LLM_ROWS: dict[str, tuple[str, str]] = {
    "zero_shot": ("zero-shot LLM steerer (base model, served)", BASE_NAME),
    "trained": ("the same LLM trained by the steering trainer (LoRA adapter, served)", ADAPTER_NAME),
}


@dataclass(frozen=True)
class TrainBudget:
    """The steering trainer's budget (SteeringConfig's fields of the same names) and the LoRA steerer's size."""

    m: int = 2
    k: int = 4
    G: int = 2
    N: int = 2
    bank_tasks: int = 12
    bank_rollouts: int = 1
    update_epochs: int = 1
    lora_rank: int = 8
    lr: float = 2e-3
    seed: int = 0


def same_named(source: Any, target: type) -> dict[str, Any]:
    """``source``'s values for the fields of the dataclass ``target`` it has an attribute of the same name for: how
    the command line fills the configs and the budget fills the trainer's config, each field named once."""
    return {f.name: getattr(source, f.name) for f in fields(target) if hasattr(source, f.name)}


@dataclass(frozen=True)
class HeadlineConfig:
    """One headline run. ``model``: a transformers model folder, or a packaged name (``gemma-3-270m``).
    ``test_limit`` / ``dev_limit``: tasks per benchmark; ``seeds`` / ``dev_seeds``: evaluation seeds per task.
    ``prompt_chars`` / ``think_tokens``: the steerers' prompt cap (a third of it in tokens: :func:`prompt_tokens`,
    for the trained steerer and the served rows alike) and reasoning budget. ``workers``: episodes in flight
    against the server. ``device``: where vLLM and the trainer run (``cpu``, ``cuda`` or ``auto``)."""

    out: str
    model: str = "gemma-3-270m"
    executor: str = "sim:default"
    benchmarks: tuple[str, ...] = ()
    test_limit: int = 5
    seeds: int = 2
    dev_limit: int = 3
    dev_seeds: int = 1
    max_turns: int = 10
    target: float = 1.0
    tolerance: float = 0.15
    max_probes: int = 6
    train: TrainBudget = field(default_factory=TrainBudget)
    prompt_chars: int = 900
    think_tokens: int = 24
    name_choice: str = "choice"
    max_model_len: int = 4096
    workers: int = 8
    device: str = "cpu"
    port: int = 0
    startup_timeout: float = 1800.0
    progress: bool = False


QUICK = {
    "test_limit": 1,
    "seeds": 1,
    "dev_limit": 1,
    "max_turns": 4,
    "max_probes": 2,
    "tolerance": 1.0,
    "benchmarks": ("nq", "hotpotqa"),
    "max_model_len": 2048,
    "prompt_chars": 1800,  # 600 tokens: the tiny test model's tokenizer needs ~300 for a goal with its counters
    "think_tokens": 4,
    "workers": 4,
    "train": TrainBudget(m=1, k=2, G=2, N=1, bank_tasks=2),
}


def model_folder(model: str) -> Path:
    """A model folder, or the packaged model of that name (``gemma-3-270m``: converted once into the cache)."""
    folder = Path(model).expanduser()
    if (folder / "config.json").is_file():
        return folder.resolve()
    from steer_envs.llm.packaged import PACKAGED_MODELS, packaged_model_dir

    if model in PACKAGED_MODELS:
        return packaged_model_dir(model)
    raise SteerEnvsError(
        f"--model {model!r} is neither a transformers model folder (config.json) nor a packaged model "
        f"({', '.join(PACKAGED_MODELS)})"
    )


# -- wall times ----------------------------------------------------------------------------------------------------
class Timings:
    """Wall seconds per part, summed over the invocations that did work on it (``OUT/timings.json``); a part an
    invocation found finished adds nothing, so a resumed run reports what its parts cost."""

    def __init__(self, root: Path) -> None:
        self.path = root / TIMINGS_FILE
        self.data: dict[str, dict[str, Any]] = json.loads(self.path.read_text()) if self.path.is_file() else {}

    @contextmanager
    def part(self, name: str) -> Iterator[dict[str, Any]]:
        """Time the block; it sets ``note["worked"] = False`` when it found the part finished."""
        note: dict[str, Any] = {"worked": True}
        start = time.monotonic()
        yield note
        if note.pop("worked"):
            entry = self.data.setdefault(name, {"seconds": 0.0, "invocations": 0})
            entry["seconds"] = round(entry["seconds"] + time.monotonic() - start, 1)
            entry["invocations"] += 1
            entry.update(note)
            atomic_write_json(self.path, self.data, sort_keys=False)


# -- the parts -------------------------------------------------------------------------------------------------------
def eval_config(config: HeadlineConfig, split: str):
    from steer_envs.data.tasks import BENCHMARKS

    from .harness.config import EvalConfig

    dev = split == "dev"
    return EvalConfig(
        executor=config.executor,
        benchmarks=tuple(config.benchmarks or BENCHMARKS),
        split=split,
        seeds=config.dev_seeds if dev else config.seeds,
        limit=config.dev_limit if dev else config.test_limit,
        max_turns=config.max_turns,
    )


def steering_config(config: HeadlineConfig, folder: Path):
    """The trainer's config: the causal-LM backbone with LoRA on ``folder``, the run's executor on the train split."""
    from agents.steering.config import SteeringConfig
    from baselines.steering import ACTION_MODE
    from steer_envs.data.tasks import BENCHMARKS

    budget = config.train
    on_cpu = config.device == "cpu"
    accelerator = {} if on_cpu else {"device": "auto", "dtype": "bfloat16"}  # an 8B model trains in bf16 on its GPU
    return SteeringConfig(
        executor=config.executor,
        benchmarks=list(config.benchmarks or BENCHMARKS),
        split="train",
        max_turns=config.max_turns,
        action_mode=ACTION_MODE,
        **same_named(budget, SteeringConfig),
        bank_seed=budget.seed,
        backbone="causal_lm",
        device="cpu" if on_cpu else "auto",
        mixed_precision="no" if on_cpu else "bf16",
        backbone_args={
            "model": str(folder),
            "lora": True,
            "lora_rank": budget.lora_rank,
            "seed": budget.seed,
            "max_think_tokens": config.think_tokens,
            "max_prompt_tokens": prompt_tokens(config),
            **accelerator,
        },
    )


def train_adapter(config: HeadlineConfig, folder: Path, note: dict[str, Any]) -> Path:
    """Train (or resume, or find finished) the LoRA steerer in ``OUT/train``; its peft adapter folder."""
    from agents.steering.causal_lm import ADAPTER_DIR
    from agents.steering.trainer import MODEL_FILE, SteeringTrainer
    from agents.trainer_base import LOG_FILE

    run_dir = Path(config.out, "train")
    steering = steering_config(config, folder)
    rounds = len(Path(run_dir, LOG_FILE).read_text().splitlines()) if Path(run_dir, LOG_FILE).is_file() else 0
    if (run_dir / MODEL_FILE).is_file() and (run_dir / ADAPTER_DIR).is_dir() and rounds >= steering.m:
        note["worked"] = False
        return run_dir / ADAPTER_DIR
    SteeringTrainer(steering, run_dir, resume=True, progress=config.progress).run()
    note.update(rounds=steering.m, fingerprint=steering.fingerprint())
    release_accelerator()
    return run_dir / ADAPTER_DIR


def release_accelerator() -> None:
    """Hand the trainer's GPU memory back before vLLM starts in the same machine (it sizes its cache from what is
    free); a no-op on CPU."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def prompt_tokens(config: HeadlineConfig) -> int:
    """The prompt budget in tokens of every row: the trained steerer's, and the served rows' (fitted in the
    server's tokens, so a served adapter reads the ids it was trained on)."""
    return max(64, config.prompt_chars // 3)


def served_spec(server_spec: str, config: HeadlineConfig) -> str:
    """The served steerer's method spec (τ is chosen on dev): prompts fitted and z read in the server's tokens."""
    return (
        f"steering_zero_shot:model={server_spec},fit=tokens,prompt_tokens={prompt_tokens(config)},"
        f"think_tokens={config.think_tokens},name_choice={config.name_choice}"
    )


def _port(config: HeadlineConfig, state: dict[str, Any]) -> int:
    from steer_envs.llm.vllm_engine import free_port

    if "port" not in state:
        state["port"] = config.port or free_port()
    return int(state["port"])


# -- the report ------------------------------------------------------------------------------------------------------
def row_summary(records, benchmarks: Sequence[str]) -> dict[str, Any]:
    from .harness.stats import benchmark_means, macro_mean

    decisions = sum(r.decisions for r in records)
    return {
        "f1": 100 * macro_mean(records, benchmarks),
        "f1_by_benchmark": {b: 100 * v for b, v in benchmark_means(records, benchmarks).items()},
        "interventions": sum(r.interventions for r in records) / max(1, len(records)),
        "decisions": decisions / max(1, len(records)),
        "agent_turns": sum(r.executor_turns for r in records) / max(1, len(records)),
        "episodes": len(records),
        "failed": sum(1 for r in records if r.failure),
    }


def decision_stats(path: Path) -> dict[str, Any] | None:
    """What a served steerer's decision log (``decisions.jsonl``) says about its two paths: the fast path's ``z``
    and how many slow-path outputs named an intervention (an unparsable line is a pass)."""
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    zs = [r["z"] for r in rows if r.get("path") == "fast"]
    slow = [r for r in rows if r.get("path") == "slow"]
    named = [r["name"] for r in slow if r.get("parsed") and r.get("name") not in (None, "pass")]
    return {
        "fast": len(zs),
        "z_mean": sum(zs) / len(zs) if zs else None,
        "z_min": min(zs, default=None),
        "z_max": max(zs, default=None),
        "slow": len(slow),
        "parsed": sum(1 for r in slow if r.get("parsed")),
        "named_intervention": len(named),
        "names": {n: named.count(n) for n in sorted(set(named))},
    }


def dev_logs(dev_folder) -> dict[str, Any]:
    """Every served steerer probed on dev (any invocation, any ``name_choice``): its probes' interventions per task
    and its decision log, keyed by the label without τ."""
    from baselines.registry import parse_method
    from baselines.steering import DECISION_LOG
    from steer_envs.episodes import EpisodeLog

    from .harness.operating import without_option

    out: dict[str, Any] = {}
    for label in dev_folder.methods():
        base = without_option(label, "tau")
        options = parse_method(label).given
        records = EpisodeLog(dev_folder.episodes_path(label)).records
        if base not in out:
            out[base] = {
                "served": options.get("model", ""),
                "name_choice": options.get("name_choice", "parse"),
                "probes": [],
                "decision_log": decision_stats(dev_folder.checkpoint_dir(base) / DECISION_LOG),
            }
        entry = out[base]
        entry["probes"].append(
            {
                "tau": options.get("tau"),
                "episodes": len(records),
                "interventions": sum(r.interventions for r in records) / max(1, len(records)),
            }
        )
    return out


def build_report(
    config: HeadlineConfig,
    test_folder,
    choices: dict[str, Any],
    timings: Timings,
    state: dict[str, Any],
    pending: list[str],
    dev_folder=None,
) -> dict[str, Any]:
    """Rows whose test episodes are complete, their paired intervals, the card and the wall times."""
    from steer_envs.episodes import EpisodeLog

    from .harness.provenance import code_record
    from .harness.setting import setting_card
    from .harness.stats import HierarchicalBootstrap, RowRuns

    cfg = test_folder.config
    expected = len(cfg.tasks()) * cfg.seeds
    labels = {REFERENCE: ("no supervision", REFERENCE)}
    labels.update({key: (LLM_ROWS[key][0], choice["label"]) for key, choice in choices.items() if "label" in choice})
    records = {}
    for key, (_name, label) in labels.items():
        found = EpisodeLog(test_folder.episodes_path(label)).records
        if len(found) == expected:
            records[key] = found
        elif found:  # a row cut off mid-evaluation: say how far it got
            pending[:] = [f"{p} ({len(found)}/{expected} episodes)" if p == f"test: {key}" else p for p in pending]
    benchmarks = list(cfg.benchmarks)
    rows: dict[str, Any] = {}
    comparisons: dict[str, Any] = {}
    if records:
        boot = HierarchicalBootstrap(
            [RowRuns(key, {labels[key][1]: recs}) for key, recs in records.items()], benchmarks, resamples=RESAMPLES
        )
        for key, recs in records.items():
            rows[key] = {"name": labels[key][0], "label": labels[key][1], **row_summary(recs, benchmarks)}
            if key != REFERENCE and REFERENCE in records:
                rows[key]["gain"] = asdict(boot.gain(key, REFERENCE)[1])
            if key in choices:
                from baselines.steering import DECISION_LOG

                from .harness.operating import without_option

                base = without_option(labels[key][1], "tau")
                rows[key]["decision_log"] = decision_stats(test_folder.checkpoint_dir(base) / DECISION_LOG)
                rows[key]["dev"] = {k: choices[key][k] for k in ("knob", "value", "dev_rate", "target")}
                rows[key]["dev"]["probes"] = [{"value": p["value"], "rate": p["rate"]} for p in choices[key]["probes"]]
        if {"trained", "zero_shot"} <= set(records):
            comparisons["trained vs zero-shot"] = asdict(boot.gain("trained", "zero_shot")[1])
    card = asdict(setting_card(test_folder))
    card["commits"] = list(card["commits"])
    card.update(
        model=state.get("model_name", config.model),
        served_by=state.get("served_by", "vLLM"),
        served_rows=[LLM_ROWS[k][0] for k in LLM_ROWS],
        dev_tasks_per_benchmark=config.dev_limit,
        dev_seeds=config.dev_seeds,
        target_interventions_per_task=config.target,
        dev_tolerance=config.tolerance,
        train=asdict(config.train),
        prompt_chars=config.prompt_chars,
        prompt_tokens=prompt_tokens(config),
        served_fit="tokens",
        think_tokens=config.think_tokens,
        name_choice=config.name_choice,
        max_model_len=config.max_model_len,
        device=config.device,
        episodes_in_flight=config.workers,
        vllm=state.get("vllm", ""),
    )
    folders = [test_folder.root, *([dev_folder.root] if dev_folder is not None else [])]
    return {
        "card": card,
        "code": code_record(folders),
        "rows": rows,
        "comparisons": comparisons,
        "timings": timings.data,
        "pending": pending,
        "complete": not pending,
        "dev_steerers": dev_logs(dev_folder) if dev_folder is not None else {},
    }


def write_report(
    config: HeadlineConfig,
    report: dict[str, Any],
    doc: str | Path | None = None,
    summary: str | Path | None = None,
    test_folder=None,
) -> None:
    """The report in the run folder (and its copy in ``summary``, a folder the page can be rebuilt from alone, with
    every test episode of the report's rows from ``test_folder``: the evidence behind its paired intervals), the
    page beside it (and at ``doc``)."""
    from .pages.llm_headline import PAGE

    for folder in {Path(config.out), *([Path(summary)] if summary else [])}:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / REPORT_FILE, report, sort_keys=False)
    if summary and test_folder is not None:
        from steer_envs.episodes import EpisodeLog

        from .harness.results_summary import EPISODE_FIELDS, EPISODES_FILE, gzip_lines

        lines = [
            {"row": key, "label": row["label"], **{k: getattr(r, k) for k in EPISODE_FIELDS}}
            for key, row in report["rows"].items()
            for r in EpisodeLog(test_folder.episodes_path(row["label"])).records
        ]
        atomic_write_bytes(Path(summary, EPISODES_FILE), gzip_lines(lines))
    for path in {Path(config.out, "results_llm_headline.md"), *([Path(doc)] if doc else [])}:
        PAGE.build(config.out, path, data={"report": report})


# -- the run ---------------------------------------------------------------------------------------------------------
def run(
    config: HeadlineConfig,
    doc: str | Path | None = None,
    log: Callable[[str], None] = print,
    summary: str | Path | None = None,
) -> dict[str, Any]:
    """Every part, resuming what a previous invocation finished; the report (written to ``OUT``, to ``summary`` and
    as the page, to ``doc``, after every part)."""
    from steer_envs.episodes import EpisodeLog
    from steer_envs.llm.vllm_engine import VLLMServeOptions, VLLMServer
    from steer_envs.rollouts import PoolConfig

    from .harness.operating import cached_choice, choose_rate, without_option
    from .harness.runfolder import RunFolder
    from .harness.runner import evaluate

    root = Path(config.out)
    root.mkdir(parents=True, exist_ok=True)
    state_path = root / STATE_FILE
    state: dict[str, Any] = json.loads(state_path.read_text()) if state_path.is_file() else {}
    timings = Timings(root)
    test = RunFolder(root / "test", eval_config(config, "test"))
    dev = RunFolder(root / "dev", eval_config(config, "dev"))
    pending = [
        "test: no_supervision",
        "train",
        "serve",
        *(f"dev: {k}" for k in LLM_ROWS),
        *(f"test: {k}" for k in LLM_ROWS),
    ]
    choices: dict[str, Any] = {}

    def checkpoint() -> dict[str, Any]:
        report = build_report(config, test, choices, timings, state, list(pending), dev)
        write_report(config, report, doc, summary, test)
        return report

    def evaluate_part(part: str, folder, spec: str, pool=None) -> None:
        with timings.part(part) as note:
            outcome = evaluate(folder, spec, progress=config.progress, log=log, pool=pool)
            note["worked"] = outcome.ran > 0
            note["episodes"] = len(outcome.records)

    log(f"[headline] run folder {root}: test no supervision")
    evaluate_part("test: no_supervision", test, REFERENCE)
    pending.remove("test: no_supervision")
    checkpoint()
    folder = model_folder(config.model)
    state.setdefault("model_name", folder.name if Path(config.model).expanduser().is_dir() else config.model)
    log(f"[headline] training the LoRA steerer on {folder} in {root / 'train'}")
    with timings.part("train") as note:
        adapter = train_adapter(config, folder, note)
    pending.remove("train")
    port = _port(config, state)
    atomic_write_json(state_path, state)
    options = VLLMServeOptions(
        model=str(folder),
        name=BASE_NAME,
        port=port,
        max_model_len=config.max_model_len,
        adapters=((ADAPTER_NAME, str(adapter)),),
        max_lora_rank=max(8, config.train.lora_rank),
        device=config.device,
        log_path=str(root / "vllm.log"),
        startup_timeout=config.startup_timeout,
    )
    pool = PoolConfig("threads", workers=config.workers)
    url = f"http://{options.host}:{port}/v1"  # what server.spec() gives once it runs on that port
    specs = {key: served_spec(f"openai:{served}@{url}", config) for key, (_, served) in LLM_ROWS.items()}
    expected = len(test.config.tasks()) * test.config.seeds
    for key, spec in specs.items():  # parts a previous invocation finished need no server
        found = cached_choice(dev, without_option(spec, "tau"))
        if found is not None and found.target == config.target:
            choices[key] = asdict(found)
    todo = [
        k
        for k in specs
        if k not in choices or len(EpisodeLog(test.episodes_path(choices[k]["label"])).records) < expected
    ]
    if not todo:
        pending.clear()
        return checkpoint()
    log(f"[headline] starting vLLM on port {port} (base + adapter {adapter}); log {options.log_path}")
    with timings.part("serve (vLLM start-up)") as note:
        server = VLLMServer(options).start()
        note["startup_s"] = round(server.startup_seconds or 0.0, 1)
    try:
        if server.base_url != url:
            raise SteerEnvsError(f"the vLLM server runs at {server.base_url}, not at {url}, which the labels name")
        where = "CPU" if config.device == "cpu" else config.device
        state["served_by"] = f"vLLM ({where}), base and adapter in one server"
        venv = Path(server.command[0]).parent.parent.name if server.command else ""
        state["vllm"] = venv if "vllm" in venv else f"vllm under {server.command[0] if server.command else '?'}"
        atomic_write_json(state_path, state)
        pending.remove("serve")
        for key, spec in specs.items():
            log(f"[headline] dev matching: {key}")
            with timings.part(f"dev: {key}") as note:
                note["worked"] = key not in choices
                choice = choose_rate(
                    dev,
                    spec,
                    target=config.target,
                    tolerance=config.tolerance,
                    max_probes=config.max_probes,
                    progress=config.progress,
                    log=log,
                    pool=pool,
                )
                note["probes"] = len(choice.probes)
            choices[key] = asdict(choice)
            pending.remove(f"dev: {key}")
            checkpoint()
        for key in LLM_ROWS:
            log(f"[headline] test: {key} at {choices[key]['knob']}={choices[key]['value']}")
            evaluate_part(f"test: {key}", test, choices[key]["label"], pool)
            pending.remove(f"test: {key}")
            checkpoint()
    finally:
        server.stop()
    return checkpoint()


# -- the command -----------------------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    d, t = HeadlineConfig(out=""), TrainBudget()
    parser.add_argument("--out", required=True, help="run folder (resumable): test/, dev/, train/, llm_headline.json")
    parser.add_argument(
        "--model",
        default=d.model,
        help=f"the steerer LLM: a transformers model folder (e.g. /models/Qwen3-8B) or a packaged "
        f"model (default {d.model})",
    )
    parser.add_argument("--test-limit", type=int, default=d.test_limit, help="test tasks per benchmark")
    parser.add_argument("--seeds", type=int, default=d.seeds, help="evaluation seeds per test task")
    parser.add_argument("--dev-limit", type=int, default=d.dev_limit, help="dev tasks per benchmark (τ matching)")
    parser.add_argument("--dev-seeds", type=int, default=d.dev_seeds, help="evaluation seeds per dev task")
    add_protocol_arguments(parser, include=("benchmarks", "max_turns"), defaults={"max_turns": d.max_turns})
    parser.add_argument("--target", type=float, default=d.target, help="interventions per task to match on dev")
    parser.add_argument("--tolerance", type=float, default=d.tolerance, help="dev matching stops within this")
    parser.add_argument("--max-probes", type=int, default=d.max_probes, help="dev τ probes per LLM row at most")
    for name in ("m", "k", "G", "N", "bank_tasks", "update_epochs", "lora_rank"):
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            type=int,
            default=getattr(t, name),
            help=f"trainer {name} (default {getattr(t, name)})",
        )
    parser.add_argument("--lr", type=float, default=t.lr, help=f"trainer learning rate (default {t.lr})")
    parser.add_argument("--prompt-chars", type=int, default=d.prompt_chars)
    parser.add_argument("--think-tokens", type=int, default=d.think_tokens)
    parser.add_argument(
        "--name-choice",
        default=d.name_choice,
        choices=("choice", "parse"),
        help="the served slow path's NAME: chosen among the names by the server (as the trained "
        "steerer chooses) or parsed from the generated line (default choice)",
    )
    parser.add_argument("--max-model-len", type=int, default=d.max_model_len, help="the context vLLM enforces")
    parser.add_argument("--workers", type=int, default=d.workers, help="episodes in flight against the server")
    parser.add_argument(
        "--device",
        default=d.device,
        choices=("cpu", "cuda", "auto"),
        help="where vLLM and the trainer run (default cpu)",
    )
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: a free one, kept on resume)")
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=d.startup_timeout,
        help="seconds vLLM may take to start (a loaded CPU machine needs many minutes)",
    )
    parser.add_argument("--doc", help="also write the page here (e.g. docs/results_llm_headline.md)")
    parser.add_argument(
        "--summary",
        help="also write llm_headline.json to this folder (e.g. docs/data/llm_headline, "
        "what `steer-envs report results_llm_headline` rebuilds the page from)",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke test: 2 benchmarks, 1 task each, tiny budgets")
    parser.add_argument("--progress", action="store_true", help="progress bars")


def config_from_args(args: argparse.Namespace) -> HeadlineConfig:
    """The run's config: every field with an option of the same name, the trainer's budget among them."""
    config = HeadlineConfig(
        **{**same_named(args, HeadlineConfig), "benchmarks": tuple(args.benchmarks or ())},
        train=TrainBudget(**same_named(args, TrainBudget)),
    )
    return replace(config, **QUICK) if args.quick else config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.llm_headline", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    report = run(config_from_args(args), doc=args.doc, summary=args.summary)
    print(Path(args.out, "results_llm_headline.md").read_text(encoding="utf-8"))
    return 0 if report["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
