"""``python -m perf.gpu_check``: the paper-scale check that fits a short GPU slot.

Why it exists: the suite's CI machine has no GPU, so the LLM steerer, the ACTGUIDE-RL LLM learner and the
concurrent vector env are tested there on tiny models; this script runs the same code at the papers' shapes on
one GPU and writes the figures BENCHMARKS.md reports. Nothing is downloaded: the models are random-initialised
Qwen2-architecture networks built from configs (the papers' steerer is Qwen3-8B-shaped, the learner smaller), with
the tiny model's BPE tokenizer, so text quality is meaningless but every tensor shape, memory and throughput
figure is real.

Sections (each timed on its own, its peak GPU memory measured from a reset, and written to the JSON as soon as it
ends, so a slot that runs out keeps what finished):

* ``steerer_<size>``: fast-path scoring of padded batches against one observation per forward pass
  (observations/s both ways: the batching ratio the CPU cannot show, its forward being compute-bound), slow-path
  sampling through
  ``generate`` with G return sequences (generated tokens/s), then a few steering-trainer rounds with the LLM
  steerer in bf16 + LoRA (iterations/min);
* ``actguide``: a few ACTGUIDE-RL iterations with the causal-LM learner (iterations/min, generated tokens/s);
* ``vector``: the async vector env (``AsyncPoolEnv``, 8 envs per ``recv``) with 256 envs in flight, then the
  concurrent vector env, against a loopback OpenAI-compatible server in its own process answering every request
  after 100 ms (requests/s against the 2,560/s the server can take);
* ``vllm``: the real engine. A vLLM server (``steer_envs.llm.vllm_engine``, on the GPU) serves the learner-shaped
  random model and a LoRA steerer adapter written by ``CausalLMSteerer.save_adapter`` (``--lora-modules``); the
  suite's eval path (``evaluate`` on the default pool, an ``openai:`` executor) runs 256 episodes in flight
  against it (completion tokens/s from the server's ``usage``, steady state and whole run; episodes/min); then
  one scored request through the adapter and the served-vs-peft check
  (``agents.steering.served_check.check_served_adapter``) on a few states. The server runs in float32: the
  check's tolerance is fp32's, and one server serves both parts.

``--smoke`` runs every section on CPU at toy sizes (a minute here, the ``vllm`` section a few more: it serves the
tiny model through vLLM's CPU build, 16 episodes in flight): what a machine without a GPU can check, and what the
test suite runs so this script cannot rot. It is never a GPU figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelShape:
    """A Qwen2-architecture shape (the vocabulary is the tiny tokenizer's, so parameters are a little fewer)."""

    name: str
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    intermediate_size: int


#: the papers' shapes: Qwen2.5-0.5B and Qwen3-8B (hidden, layers, heads, kv heads, MLP width)
SHAPES = {
    "0.5b": ModelShape("0.5b", 896, 24, 14, 2, 4864),
    "8b": ModelShape("8b", 4096, 36, 32, 8, 12288),
    "smoke": ModelShape("smoke", 64, 2, 4, 2, 128),
}


@dataclass(frozen=True)
class CheckPlan:
    """What one run measures. The defaults are the GPU plan (``gpu()``); ``smoke()`` overrides them with toy sizes
    on CPU, so each figure is written once and the smoke plan lists only what it shrinks."""

    device: str = "cuda"
    dtype: str = "bfloat16"
    mixed_precision: str = "bf16"
    steerer_shapes: tuple[str, ...] = ("0.5b", "8b")
    learner_shape: str = "0.5b"
    observations: int = 256  # fast path: observations scored per measurement
    slow_states: int = 16  # slow path: states sampled, G samples each
    G: int = 8
    think_tokens: int = 64
    steering_rounds: int = 3
    steering_k: int = 8
    actguide_iterations: int = 3
    actguide_batch_tasks: int = 8
    actguide_group: int = 8
    vector_envs: int = 256
    vector_steps: int = 8
    vector_batch: int = 8
    vector_results: int = 12 * 256
    latency_s: float = 0.1
    vllm_in_flight: int = 256
    vllm_episodes: int = 1024  # nq test tasks x 2 seeds
    vllm_max_new_tokens: int = 32
    vllm_adapter_states: int = 8

    @classmethod
    def gpu(cls) -> CheckPlan:
        return cls()

    @classmethod
    def smoke(cls) -> CheckPlan:
        return cls(
            device="cpu",
            dtype="float32",
            mixed_precision="no",
            steerer_shapes=("smoke",),
            learner_shape="smoke",
            observations=8,
            slow_states=2,
            G=2,
            think_tokens=4,
            steering_rounds=1,
            steering_k=2,
            actguide_iterations=1,
            actguide_batch_tasks=2,
            actguide_group=2,
            vector_envs=16,
            vector_steps=3,
            vector_batch=4,
            vector_results=64,
            latency_s=0.05,
            vllm_in_flight=16,
            vllm_episodes=32,  # two waves of 16 in flight: new episodes start as others end
            vllm_max_new_tokens=16,
            vllm_adapter_states=2,
        )


# -- measuring ---------------------------------------------------------------------------------------------------
def _cuda() -> Any:
    import torch

    return torch.cuda if torch.cuda.is_available() else None


def _sync() -> None:
    cuda = _cuda()
    if cuda is not None:
        cuda.synchronize()


class Section:
    """Times a section and reads its peak GPU memory (from a reset at its start)."""

    def __init__(self) -> None:
        cuda = _cuda()
        if cuda is not None:
            cuda.empty_cache()
            cuda.reset_peak_memory_stats()
        self.start = time.perf_counter()

    def close(self, figures: dict[str, Any]) -> dict[str, Any]:
        _sync()
        figures["wall_s"] = round(time.perf_counter() - self.start, 2)
        cuda = _cuda()
        figures["peak_gpu_memory_gb"] = round(cuda.max_memory_allocated() / 2**30, 2) if cuda is not None else None
        return figures


def build_model(shape: ModelShape, folder: Path, plan: CheckPlan) -> Path:
    """A random Qwen2-architecture model of ``shape``, written in the plan's dtype (built on the plan's device:
    initialising 8B parameters on a GPU takes seconds, on CPU minutes)."""
    from steer_envs.llm.qwen_shaped import build_random_qwen2

    if not (folder / "config.json").is_file():
        build_random_qwen2(
            folder,
            hidden_size=shape.hidden_size,
            layers=shape.layers,
            heads=shape.heads,
            kv_heads=shape.kv_heads,
            intermediate_size=shape.intermediate_size,
            dtype=plan.dtype,
            device=plan.device,
        )
    return folder


def parameter_count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def sample_observations(n: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """Observations of SearchSteering-v0 on the embedded default after one or two executor turns (real text), and
    the env's intervention catalogue."""
    import gymnasium as gym

    import steer_envs  # noqa: F401 - registers the ids
    from steer_envs.ids import STEERING_ENV

    env = gym.make(STEERING_ENV, executor="sim:default", split="dev", action_mode="text")
    out: list[dict[str, Any]] = []
    seed = 0
    while len(out) < n:
        obs, _ = env.reset(seed=seed)
        seed += 1
        for _ in range(2):
            obs, _, terminated, truncated, _ = env.step("pass")
            if terminated or truncated:
                break
            out.append(obs)
    catalogue = list(env.unwrapped.catalogue)
    env.close()
    return out[:n], catalogue


def check_steerer(shape: ModelShape, plan: CheckPlan, work: Path) -> dict[str, Any]:
    import torch

    from agents.steering.config import SteeringConfig
    from agents.steering.trainer import SteeringTrainer

    folder = build_model(shape, work / f"qwen2-{shape.name}", plan)
    backbone_args = {
        "model": f"hf:{folder}",
        "lora": True,
        "lora_rank": 16,
        "device": plan.device,
        "dtype": plan.dtype,
        "gradient_checkpointing": plan.device != "cpu",
        "max_think_tokens": plan.think_tokens,
        "batch_size": 32,
        "micro_batch": 4,
    }
    figures: dict[str, Any] = {"shape": asdict(shape)}
    section = Section()
    from agents.steering.causal_lm import CausalLMSteerer
    from agents.steering.interventions import options_from_catalogue

    observations, catalogue = sample_observations(plan.observations)
    steerer = CausalLMSteerer(options_from_catalogue(catalogue), **backbone_args)
    figures["parameters_b"] = round(parameter_count(steerer.lm) / 1e9, 3)
    with torch.no_grad():
        steerer.fast_scores(observations[:4])  # warm-up (kernels, allocator)
        _sync()
        start = time.perf_counter()
        steerer.fast_scores(observations)
        _sync()
        batched_s = time.perf_counter() - start
        start = time.perf_counter()
        for obs in observations[:32]:  # the one-forward-per-observation path, on the first 32
            steerer.fast_scores([obs])
        _sync()
        single_s = (time.perf_counter() - start) / min(32, len(observations))
        figures["fast_path_observations_per_s"] = round(len(observations) / batched_s, 1)
        figures["fast_path_one_at_a_time_observations_per_s"] = round(1 / single_s, 1)
        figures["fast_path_batching_speedup"] = round(single_s * len(observations) / batched_s, 2)
    generator = torch.Generator().manual_seed(0)
    tokens, start = 0, time.perf_counter()
    for obs in observations[: plan.slow_states]:
        samples = steerer.sample_slow(obs, plan.G, generator)
        tokens += sum(len(s.payload["think"]) for s in samples)
    _sync()
    figures["slow_path_generated_tokens_per_s"] = round(tokens / (time.perf_counter() - start), 1)
    figures["slow_path_G"] = plan.G
    del steerer
    figures = section.close(figures)

    section = Section()
    config = SteeringConfig(
        backbone="causal_lm",
        backbone_args=backbone_args,
        device=plan.device,
        mixed_precision=plan.mixed_precision,
        micro_batch=2,
        m=plan.steering_rounds,
        k=plan.steering_k,
        G=4,
        N=2,
        bank_tasks=4 * plan.steering_k,
        bank_rollouts=1,
        update_epochs=1,
        lr=1e-4,
    )
    start = time.perf_counter()
    SteeringTrainer(config, work / f"steer-{shape.name}").run()
    minutes = (time.perf_counter() - start) / 60
    train = section.close(
        {"rounds": plan.steering_rounds, "iterations_per_min": round(plan.steering_rounds / minutes, 2)}
    )
    figures["training"] = train
    return figures


def check_actguide(shape: ModelShape, plan: CheckPlan, work: Path) -> dict[str, Any]:
    from agents.actguide.config import ActGuideConfig
    from agents.actguide.trainer import ActGuideTrainer

    folder = build_model(shape, work / f"qwen2-{shape.name}", plan)
    batch_tasks, group = plan.actguide_batch_tasks, plan.actguide_group
    config = ActGuideConfig(
        learner="causal_lm",
        learner_args={
            "model": f"hf:{folder}",
            "device": plan.device,
            "dtype": plan.dtype,
            "micro_batch": 8,
            "max_new_tokens": plan.think_tokens,
        },
        device=plan.device,
        mixed_precision=plan.mixed_precision,
        micro_batch=16,
        tasks_per_benchmark=2,
        batch_tasks=batch_tasks,
        group_size=group,
        budget=plan.actguide_iterations * batch_tasks * group,
        lr=1e-5,
        update_epochs=1,
    )
    section = Section()
    start = time.perf_counter()
    result = ActGuideTrainer(config, work / f"actguide-{shape.name}").run()
    minutes = (time.perf_counter() - start) / 60
    return section.close(
        {
            "shape": asdict(shape),
            "iterations": result.iterations,
            "rollouts": result.budget_used,
            "iterations_per_min": round(result.iterations / minutes, 2),
        }
    )


def check_vector(plan: CheckPlan) -> dict[str, Any]:
    """The async vector env (its default engine) with ``vector_envs`` envs, ``vector_batch`` returned per ``recv``
    and sent straight back, then the concurrent vector env (every env per step), against one loopback server in its
    own process: requests/s at the server, as a share of what it can take."""
    import numpy as np

    from steer_envs.async_vector import make_async_pool
    from steer_envs.ids import STEERING_ENV
    from steer_envs.vector import make_concurrent_vec
    from tests.servers.latency_server import LatencyServerProcess

    section = Section()
    n = plan.vector_envs
    ceiling = n / plan.latency_s
    server = LatencyServerProcess(plan.latency_s, reply="search", seed=0).start()
    try:
        kw = dict(executor=f"{server.spec}?max_in_flight={n}", split="dev", action_mode="discrete")
        pool = make_async_pool(STEERING_ENV, n, batch_size=plan.vector_batch, **kw)
        try:
            pool.async_reset(seed=0)
            drive_async_pool(pool, 2 * n)  # untimed: first searches, new connections
            server.counters(reset=True)
            start = time.perf_counter()
            drive_async_pool(pool, plan.vector_results)
            async_rate = server.counters()["requests"] / (time.perf_counter() - start)
        finally:
            pool.close()
        envs = make_concurrent_vec(STEERING_ENV, n, max_in_flight=n, **kw)
        try:
            envs.reset(seed=0)
            actions = np.zeros(n, dtype=np.int64)
            envs.step(actions)  # untimed, as above
            server.counters(reset=True)
            start = time.perf_counter()
            for _ in range(plan.vector_steps):
                envs.step(actions)
            concurrent_rate = server.counters()["requests"] / (time.perf_counter() - start)
        finally:
            envs.close()
    finally:
        server.stop()
    return section.close(
        {
            "episodes_in_flight": n,
            "latency_s": plan.latency_s,
            "ceiling_requests_per_s": ceiling,
            "async_batch": plan.vector_batch,
            "requests_per_s": round(async_rate, 1),
            "share_of_ceiling": round(async_rate / ceiling, 3),
            "concurrent_vec_requests_per_s": round(concurrent_rate, 1),
            "concurrent_vec_share_of_ceiling": round(concurrent_rate / ceiling, 3),
        }
    )


def drive_async_pool(pool: Any, results: int) -> int:
    """recv() the ready envs and send them straight back (action 0, a pass) until ``results`` env results came;
    how many came (the last recv may overshoot). The perf suite's in-flight benchmark drives the pool the same way."""
    import numpy as np

    got = 0
    while got < results:
        *_, info = pool.recv()
        ids = info["env_id"]
        pool.send(np.zeros(len(ids), dtype=np.int64), ids)
        got += len(ids)
    return got


@dataclass(frozen=True)
class ServedModel:
    """What the ``vllm`` section serves: the model folder, its context, the adapter's rank, and the dtype."""

    folder: Path
    context: int
    lora_rank: int
    dtype: str


#: the real engine's turns per episode (a random model never answers: every episode runs them all)
VLLM_MAX_TURNS = 4
VLLM_ADAPTER = "steerer"


def served_model(plan: CheckPlan, work: Path) -> ServedModel:
    """The learner-shaped random Qwen2 on a GPU; on CPU the tiny model (vLLM's CPU attention refuses heads below
    32, the smoke shape's are 16)."""
    if plan.device == "cpu":
        from steer_envs.llm.tiny import build_tiny_causal_lm

        folder = build_tiny_causal_lm(
            work / "vllm-tiny", hidden_size=128, heads=2, max_positions=2048, chat_template=True
        )
        return ServedModel(folder, 2048, 8, "float32")
    shape = SHAPES[plan.learner_shape]
    return ServedModel(build_model(shape, work / f"qwen2-{shape.name}", plan), 4096, 16, "float32")


def write_adapter(model: ServedModel, work: Path) -> Path:
    """A LoRA steerer's adapter as training saves it, its weights moved off peft's zero start (an untouched adapter
    is the identity: served with or without it would score alike)."""
    from agents.steering.interventions import options_from_catalogue
    from agents.steering.served_check import write_perturbed_adapter

    _, catalogue = sample_observations(1)
    return write_perturbed_adapter(
        options_from_catalogue(catalogue), model.folder, work / "vllm-adapter", model.lora_rank
    )


def served_eval_throughput(server: Any, plan: CheckPlan, work: Path) -> dict[str, Any]:
    """The eval path at ``vllm_in_flight`` episodes in flight; every request recorded by the backend (its
    ``recorder``) for the server's ``usage.completion_tokens`` and the steady window (from the N-th finish to the
    N x turns-th from last, when every slot is busy)."""
    import threading

    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate
    from steer_envs.llm.registry import make_backend
    from steer_envs.rollouts import PoolConfig

    n = plan.vllm_in_flight
    spec = server.spec(max_new_tokens=plan.vllm_max_new_tokens, chat_template="off", max_in_flight=n, temperature=0)

    def run(limit: int, seeds: int, folder: Path) -> int:
        config = EvalConfig(
            executor=spec, benchmarks=("nq",), split="test", seeds=seeds, limit=limit, max_turns=VLLM_MAX_TURNS
        )
        outcome = evaluate(
            RunFolder(folder, config), "no_supervision", progress=False, log=lambda _: None, pool=PoolConfig("auto")
        )
        failures = [r.failure for r in outcome.records if r.failure]
        if failures:
            raise RuntimeError(f"{len(failures)} served episode(s) failed, e.g. {failures[0]}")
        return outcome.ran

    run(min(8, n), 1, work / "vllm-warm")  # corpus, BM25 index, connections, the engine's first batches
    backend = make_backend(server.spec(), max_in_flight=n)  # the executors' shared backend
    spans: list[tuple[float, float, int]] = []
    lock = threading.Lock()

    def record(request: Any) -> None:
        with lock:
            spans.append((request.started, request.finished, request.completion_tokens or 0))

    backend.recorder = record
    seeds = 2 if plan.vllm_episodes > 2 * n else 1
    start = time.perf_counter()
    try:
        ran = run(plan.vllm_episodes // seeds, seeds, work / "vllm-run")
    finally:
        backend.recorder = None
    seconds = time.perf_counter() - start
    spans.sort(key=lambda span: span[1])
    low, high = spans[min(n, len(spans)) - 1][1], spans[max(0, len(spans) - n * VLLM_MAX_TURNS)][1]
    steady = sum(tokens for _, finished, tokens in spans if low < finished <= high)
    total = sum(span[2] for span in spans)
    return {
        "episodes_in_flight": n,
        "episodes": ran,
        "requests": len(spans),
        "completion_tokens": total,
        "max_new_tokens": plan.vllm_max_new_tokens,
        "max_turns": VLLM_MAX_TURNS,
        "completion_tokens_per_s": round(total / seconds, 1),
        "steady_completion_tokens_per_s": round(steady / (high - low), 1) if high > low else None,
        "steady_window_s": round(high - low, 2),
        "episodes_per_min": round(60 * ran / seconds, 1),
        "eval_s": round(seconds, 2),
    }


def served_adapter_check(server: Any, model: ServedModel, adapter: Path, plan: CheckPlan) -> dict[str, Any]:
    """One scored request through the served adapter (its latency), then the served-vs-peft check."""
    from agents.steering.causal_lm import CausalLMSteerer
    from agents.steering.interventions import options_from_catalogue
    from agents.steering.served_check import check_served_adapter
    from steer_envs.llm.registry import make_backend

    states, catalogue = sample_observations(plan.vllm_adapter_states)
    steerer = CausalLMSteerer(
        options_from_catalogue(catalogue),
        model=str(model.folder),
        adapter=str(adapter),
        max_prompt_tokens=1024,
        max_think_tokens=8,
        device=plan.device,
    )
    served = make_backend(server.spec(VLLM_ADAPTER), shared=False)
    try:
        row = steerer.fast_prompt_ids(states[0]) + [steerer.yes_id]
        start = time.perf_counter()
        logprob = served.continuation_logprobs([row], [len(row) - 1])[0][0]
        scored_s = time.perf_counter() - start
        start = time.perf_counter()
        check = check_served_adapter(steerer, served, states, slow_samples=1, seed=0)
        check_s = time.perf_counter() - start
    finally:
        served.close()
    return {
        "scored_request_s": round(scored_s, 3),
        "scored_logprob": round(logprob, 4),
        "check": check.as_dict(),
        "check_s": round(check_s, 2),
    }


def check_vllm(plan: CheckPlan, work: Path) -> dict[str, Any]:
    from steer_envs.llm.vllm_engine import VLLMServeOptions, VLLMServer

    model = served_model(plan, work)
    adapter = write_adapter(model, work)
    section = Section()
    options = VLLMServeOptions(
        model=str(model.folder),
        name="check",
        max_model_len=model.context,
        dtype=model.dtype,
        adapters=((VLLM_ADAPTER, str(adapter)),),
        max_lora_rank=model.lora_rank,
        device=plan.device,
        gpu_memory_utilization=0.6,
        max_num_seqs=max(plan.vllm_in_flight, 16),
    )
    figures: dict[str, Any] = {"model": str(model.folder.name), "dtype": model.dtype, "context": model.context}
    with VLLMServer(options) as server:
        figures["startup_s"] = round(server.startup_seconds or 0.0, 1)
        figures["eval"] = served_eval_throughput(server, plan, work)
        figures["adapter"] = served_adapter_check(server, model, adapter, plan)
    if not figures["adapter"]["check"]["ok"]:  # the figures stay; the run fails on the error
        figures["error"] = f"the served adapter differs from peft's beyond the tolerance: {figures['adapter']['check']}"
    return section.close(figures)


# -- the run -----------------------------------------------------------------------------------------------------
def run_check(
    plan: CheckPlan,
    out: Path,
    only: tuple[str, ...] = (),
    skip: tuple[str, ...] = (),
    command: str = "python -m perf.gpu_check",
) -> dict[str, Any]:
    """Every section in turn; the JSON is written after each, with what the page's GPU section names (the command,
    the commit, the date, the machine), so a kept ``gpu_check.json`` is the record it renders."""
    import datetime
    import os
    import platform

    import torch
    import transformers

    from benchmarks.harness.provenance import code_version
    from steer_envs.atomic import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    device_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    results: dict[str, Any] = {
        "command": command,
        "commit": code_version(),
        "date": datetime.date.today().isoformat(),
        "machine": f"{device_name}, {os.cpu_count()} CPU cores; Python {platform.python_version()}, torch "
        f"{torch.__version__}, transformers {transformers.__version__}",
        "plan": asdict(plan),
        "torch": torch.__version__,
        "device_name": device_name,
    }
    sections: list[tuple[str, Callable[[Path], dict[str, Any]]]] = [
        *(
            (f"steerer_{name}", lambda work, name=name: check_steerer(SHAPES[name], plan, work))
            for name in plan.steerer_shapes
        ),
        ("actguide", lambda work: check_actguide(SHAPES[plan.learner_shape], plan, work)),
        ("vector", lambda work: check_vector(plan)),
        ("vllm", lambda work: check_vllm(plan, work)),
    ]
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        for name, run in sections:
            if (only and name not in only) or name in skip:
                continue
            print(f"[gpu_check] {name} ...", flush=True)
            try:
                results[name] = run(Path(tmp))
            except Exception as exc:  # noqa: BLE001 - one failed section must not lose the others' figures
                results[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
            print(f"[gpu_check] {name}: {json.dumps(results[name])[:600]}", flush=True)
            atomic_write_text(out / "gpu_check.json", json.dumps(results, indent=2))
    atomic_write_text(out / "gpu_check.md", markdown(results))
    return results


def markdown(results: dict[str, Any]) -> str:
    """The run's rows, as BENCHMARKS.md's GPU section shows them once the JSON is kept as its record."""
    from .gpu_section import failed_sections, figure_rows

    rows = [
        f"GPU check on {results['device_name']} (torch {results['torch']})",
        "",
        "| section | figure | value |",
        "| --- | --- | --- |",
        *(f"| {section} | {figure} | {value} |" for section, figure, value in figure_rows(results)),
    ]
    rows += [f"\n{name} failed: {reason}" for name, reason in failed_sections(results).items()]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/gpu_check"), help="folder for gpu_check.json/.md")
    parser.add_argument("--smoke", action="store_true", help="toy sizes on CPU (no GPU figures): checks the code runs")
    parser.add_argument(
        "--only",
        nargs="*",
        default=(),
        help="run only these sections (steerer_0.5b, steerer_8b, actguide, vector, vllm)",
    )
    parser.add_argument(
        "--skip",
        nargs="*",
        default=(),
        help="leave these sections out (e.g. vllm where vLLM's CPU build is not wanted)",
    )
    args = parser.parse_args(argv)
    import torch

    if not args.smoke and not torch.cuda.is_available():
        print(
            "gpu_check: no CUDA device; run on a GPU machine, or pass --smoke for the CPU run of the same code",
            file=sys.stderr,
        )
        return 2
    command = " ".join(["python -m perf.gpu_check", *(argv if argv is not None else sys.argv[1:])])
    results = run_check(
        CheckPlan.smoke() if args.smoke else CheckPlan.gpu(), args.out, tuple(args.only), tuple(args.skip), command
    )
    print(markdown(results))
    failed = [name for name, value in results.items() if isinstance(value, dict) and "error" in value]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
