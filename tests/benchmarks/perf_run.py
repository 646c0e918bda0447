"""A small synthetic perf-suite record: every benchmark the page reports, with the ``extra_info`` keys its test
records and made-up figures, so a renderer change is checked in milliseconds without running a benchmark."""

from __future__ import annotations

from typing import Any

ENV = "perf/test_perf_env.py"
RETRIEVAL = "perf/test_perf_retrieval.py"
SERVER = "perf/test_perf_server.py"
POOL = "perf/test_perf_pool.py"
VECTOR = "perf/test_perf_vector.py"
IN_FLIGHT = "perf/test_perf_inflight.py"
NOTES = "perf/test_perf_notes.py"
STEERER = "perf/test_perf_steerer.py"
ENGINE = "perf/test_perf_engine.py"
ADAPTER = "perf/test_perf_served_adapter.py"
HOSTILE = "perf/test_perf_hostile_load.py"
CLI = "perf/test_perf_cli.py"
COLD_START = "perf/test_perf_cold_start.py"


def bench(file: str, name: str, mean: float = 0.01, **extra: Any) -> dict[str, Any]:
    """One pytest-benchmark entry as its JSON holds it (the fields the renderer reads)."""
    stats = {"mean": mean, "median": mean * 0.9, "min": mean * 0.8, "max": mean * 1.2, "rounds": 5}
    return {"name": name, "fullname": f"{file}::{name}", "stats": stats, "extra_info": extra}


def _throughput(tokens_per_s: float) -> dict[str, Any]:
    return {
        "requests": 1024,
        "completion_tokens": 32768,
        "steady_tokens_per_s": tokens_per_s,
        "steady_window_s": 14.2,
        "run_tokens_per_s": tokens_per_s * 0.95,
        "run_s": 21.0,
        "cpu_ms_per_request": 0.61,
    }


def _in_flight(latency: str, path: str, in_flight: int, share: float, **extra: Any) -> dict[str, Any]:
    mean, cv = (1.0, 1.0) if latency.startswith("lognormal") else (0.1, 0.0)
    return {
        "latency": latency,
        "mean_latency_s": mean,
        "cv": cv,
        "path": path,
        "in_flight": in_flight,
        "requests_per_second": share * 256 / mean,
        "cpu_ms_per_request": 1.21,
        "window_s": 6.4,
        "share_of_ceiling": share,
        "ceiling": 256 / mean,
        "peak_in_flight": in_flight,
        "load_1min": 0.7,
        **extra,
    }


def _steerer(path: str, model: str, threads: int, speedup: float) -> dict[str, Any]:
    shape = {"tiny": {"hidden_size": 64, "layers": 2}, "small": {"hidden_size": 256, "layers": 4}}[model]
    common = {"threads": threads, "model": model, **shape, "speedup": speedup, "target_model": "tiny"}
    if path == "fast":
        return {
            **common,
            "observations": 32,
            "batch_size": 16,
            "prompt_tokens_mean": 297.2,
            "one_at_a_time_s": 0.75,
            "batched_s": 0.75 / speedup,
            "target_speedup": 4.0,
        }
    return {
        **common,
        "G": 8,
        "max_think_tokens": 32,
        "prompt_tokens": 385,
        "token_loop_s": 1.74,
        "generate_s": 1.74 / speedup,
        "target_speedup": 3.0,
    }


def _hostile() -> dict[str, Any]:
    row = {
        "requests": 1533,
        "refused": 0,
        "refused_statuses": {},
        "unloaded": {"n": 585, "p50_ms": 2.92, "p99_ms": 8.8, "max_ms": 12.0},
        "loaded": {"n": 585, "p50_ms": 2.25, "p99_ms": 9.37, "max_ms": 14.0},
        "p99_ratio": 1.06,
    }
    config = {
        "rounds": 3,
        "window_s": 8.0,
        "settle_s": 1.5,
        "good_clients": 3,
        "rate": 10.0,
        "header_slowloris": 64,
        "body_slowloris": 32,
        "oversized": 2,
        "nested": 2,
        "trickle_s": 0.5,
        "flood_interval_s": 0.1,
        "slow_body_bytes": 4096,
        "announced_bytes": 1 << 28,
    }
    limits = {
        "body_bytes": {"env": 1 << 20, "retriever": 2 << 20},
        "max_depth": 32,
        "header_timeout_s": 10.0,
        "body_timeout_s": 30.0,
    }
    cpu = {
        "env server": {"unloaded": 0.05, "loaded": 0.12},
        "retriever server": {"unloaded": 0.06, "loaded": 0.18},
        "attackers": {"unloaded": 0.0, "loaded": 0.07},
        "good clients": {"unloaded": 0.02, "loaded": 0.02},
    }
    attack = {"env": {"nested past the limit: 422": 236, "oversized announced: 413": 80}, "retriever": {}}
    return {
        "servers": {"env": row, "retriever": {**row, "p99_ratio": 1.18}},
        "cpu_cores": cpu,
        "attack": attack,
        "server_start_s": 5.1,
        "load_before": [2.87, 1.41, 0.59],
        "load_after": [3.71, 1.9, 0.81],
        "config": config,
        "limits": limits,
        "decode_s": 0.431,
        "wall_s": 57.0,
        "p99_ratio_limit": 3.0,
    }


def benchmarks() -> list[dict[str, Any]]:
    """Every benchmark of a full run, in run order."""
    server = {
        "name": "today's server (http.server, as of the baseline commit)",
        "requests_per_s": 145.0,
        "p50_ms": 52.4,
        "p99_ms": 128.0,
        "errors": 0,
    }
    return [
        bench(
            ENV,
            "test_env_steps_per_second_pass_policy[cache_off]",
            steps_per_second=1577.0,
            retrieval_share=0.69,
            searches=500,
            ms_per_step=0.634,
            ms_per_search=1.13,
            rounds=3,
            steps_per_round=300,
            cache=False,
            overhead_ms_per_step=0.197,
            target_overhead_ms=0.5,
        ),
        bench(
            ENV,
            "test_env_steps_per_second_pass_policy[cache_on]",
            steps_per_second=3394.0,
            retrieval_share=0.47,
            searches=200,
            ms_per_step=0.295,
            ms_per_search=1.12,
            rounds=3,
            steps_per_round=300,
            cache=True,
            overhead_ms_per_step=0.156,
            target_overhead_ms=None,
        ),
        bench(ENV, "test_fork_cost[1]", 0.001509, turn=1, transcript_chars=1499, fork_us=1500.0, growth_limit=2.0),
        bench(ENV, "test_fork_cost[20]", 0.001277, turn=20, transcript_chars=33649, fork_us=1270.0, growth_limit=2.0),
        bench(RETRIEVAL, "test_bm25s_batch_of_50", 0.064),
        bench(RETRIEVAL, "test_bm25s_single_query", 0.0014),
        bench(
            RETRIEVAL,
            "test_single_vs_batched[bm25s]",
            backend="bm25s",
            queries=64,
            k=5,
            single_qps=698.0,
            batch_qps=774.0,
            batch_speedup=1.11,
        ),
        bench(
            RETRIEVAL,
            "test_envs_stepped_together[bm25s]",
            backend="bm25s",
            envs=8,
            steps=480,
            one_by_one_steps_per_s=1927.0,
            together_steps_per_s=1337.0,
            speedup=0.69,
            mean_batch=3.6,
        ),
        bench(
            SERVER,
            "test_retrieval_server_throughput",
            servers=[server, {**server, "name": "FastAPI + uvicorn, no batching", "requests_per_s": 678.0}],
            clients=8,
            requests_per_client=100,
            rounds=3,
            baseline_commit="33d4f7814a16a1d603b687148b4c4a8e65778071",
        ),
        *(
            bench(
                POOL,
                f"test_q_labelling_throughput[{kind}-{workers}]",
                pool=kind,
                workers=workers,
                states=48,
                G=4,
                N=16,
                rollouts=3312,
                seconds=3.0,
                states_per_minute=rate,
            )
            for kind, workers, rate in (("local", 1, 765.0), ("processes", 1, 1011.0), ("processes", 2, 857.0))
        ),
        *(
            bench(
                POOL,
                f"test_trainer_wall_time[{kind}-{workers}]",
                pool=kind,
                workers=workers,
                seconds=seconds,
                config={"m": 3, "k": 32, "bank_tasks": 120},
                last_loss=0.1,
                rounds=3,
            )
            for kind, workers, seconds in (("local", 1, 6.6), ("processes", 2, 12.6))
        ),
        *(
            bench(
                VECTOR,
                f"test_make_vec_steps_per_second[{mode}-{n}]",
                num_envs=n,
                mode=mode,
                vector_steps=800,
                env_steps_per_second=rate,
            )
            for mode, n, rate in (("sync", 1, 705.0), ("async", 1, 1461.0), ("async", 2, 2810.0))
        ),
        *(
            bench(
                VECTOR,
                f"test_openai_requests_per_second[{kind}-{n}{'' if reply == 'search' else '-' + reply}]",
                vector_env=kind,
                num_envs=n,
                reply=reply,
                latency_s=0.1,
                vector_steps=10,
                requests=n * 10,
                requests_per_second=rate,
                share_of_ceiling=rate / (n / 0.1),
                new_connections=1,
                peak_in_flight=n,
                target_share=0.8 if kind == "concurrent" and reply == "search" else None,
            )
            for kind, n, reply, rate in (("concurrent", 64, "search", 358.0), ("sync", 32, "search", 9.8))
        ),
        bench(
            IN_FLIGHT,
            "test_eval_rollout_path_in_flight[lognormal-1s-greenlets]",
            **_in_flight("lognormal-1s", "eval (greenlets pool, the default)", 256, 1.02, target_share=0.9),
        ),
        bench(
            IN_FLIGHT,
            "test_vector_envs_beside[lognormal-1s-concurrent-256]",
            **_in_flight("lognormal-1s", "make_concurrent_vec", 256, 0.15, vector_steps=2),
        ),
        bench(
            IN_FLIGHT,
            "test_eval_rollout_path_in_flight[fixed-100ms-greenlets]",
            **_in_flight("fixed-100ms", "eval (greenlets pool, the default)", 256, 0.29, target_share=0.8),
        ),
        bench(
            IN_FLIGHT,
            "test_eval_rollout_path_in_flight[fixed-100ms-threads]",
            **{**_in_flight("fixed-100ms", "eval (threads pool)", 256, 0.21), "cpu_ms_per_request": 2.42},
        ),
        bench(
            IN_FLIGHT,
            "test_async_pool_in_flight[fixed-100ms-greenlets]",
            **_in_flight("fixed-100ms", "AsyncPoolEnv (batch 8, greenlets, the default)", 256, 0.83, target_share=0.8),
        ),
        bench(
            IN_FLIGHT,
            "test_eval_on_the_processes_pool",
            **_in_flight("fixed-100ms", "eval (processes pool, 2 workers)", 2, 0.007),
        ),
        bench(NOTES, "test_read_an_unseen_note_warm", 0.0031, target_ms=5.0),
        bench(NOTES, "test_read_a_cached_note", 0.00001),
        bench(STEERER, "test_fast_path_batched_vs_one_at_a_time[tiny-1-thread]", **_steerer("fast", "tiny", 1, 1.27)),
        bench(STEERER, "test_slow_path_generate_vs_token_loop[tiny-1-thread]", **_steerer("slow", "tiny", 1, 5.32)),
        bench(STEERER, "test_slow_path_generate_vs_token_loop[small-2-thread]", **_steerer("slow", "small", 2, 5.35)),
        bench(
            ENGINE,
            "test_eval_path_against_vllm_vs_async_replay",
            episodes=256,
            executor="openai:tiny@…?max_new_tokens=32&chat_template=off&max_in_flight=64&temperature=0",
            vllm_version="0.32.0",
            eager=True,
            model={"hidden_size": 128, "heads": 2, "context": 2048, "dtype": "float32"},
            target_ratio=0.85,
            in_flight=64,
            max_turns=4,
            max_new_tokens=32,
            eval=_throughput(1568.0),
            replay_aiohttp=_throughput(1280.0),
            baseline="aiohttp",
            eval_again=_throughput(1687.0),
            steady_ratio=1.22,
            run_ratio=1.16,
            before={"commit": "abc1234", "uptime": "up", "load_1min": 0.4, "cores": 2},
            after={"commit": "abc1234", "uptime": "up", "load_1min": 1.9, "cores": 2},
        ),
        bench(
            ADAPTER,
            "test_served_adapter_equals_the_local_peft_model",
            check={
                "states": 50,
                "fast_max_abs_diff": 1.3e-6,
                "slow_samples": 50,
                "slow_tokens": 3098,
                "slow_max_abs_diff": 7.6e-6,
                "token_max_abs_diff": 9.5e-6,
                "tolerance": 1e-4,
                "ok": True,
            },
            base_check={
                "states": 4,
                "fast_max_abs_diff": 0.42,
                "slow_samples": 4,
                "slow_tokens": 250,
                "slow_max_abs_diff": 0.9,
                "token_max_abs_diff": 0.5,
                "tolerance": 1e-4,
                "ok": False,
            },
            base_margin=100,
            adapter_rank=8,
            model={"hidden_size": 128, "heads": 2, "context": 2048, "dtype": "float32"},
            vllm_version="0.32.0",
        ),
        bench(HOSTILE, "test_good_clients_hold_under_hostile_load", 57.0, **_hostile()),
        bench(
            CLI,
            "test_top_level_help",
            0.52,
            command="steer-envs --help",
            rounds=5,
            cpu_s_mean=0.41,
            cpu_s_min=0.39,
            target_cpu_s=2.0,
        ),
        bench(CLI, "test_eval_help", 2.9, command="steer-envs eval --help", rounds=2, cpu_s_mean=2.5, cpu_s_min=2.4),
        bench(
            COLD_START,
            "test_first_step_with_a_text_note[warm]",
            **_cold("first step of SearchSteering-v0 with a text note", 3.47, "warm", 5.0),
        ),
        bench(
            COLD_START,
            "test_first_step_with_a_text_note[empty]",
            **_cold("first step of SearchSteering-v0 with a text note", 23.89, "empty"),
        ),
        bench(
            COLD_START,
            "test_serve_env_until_health_answers",
            **_cold("`steer-envs serve-env SearchSteering-v0` until `/health` answers", 11.5, "warm", 10.0),
        ),
        bench(COLD_START, "test_first_eval_episode", **_cold("`steer-envs eval` of one episode", 1.61, "warm")),
        bench(
            COLD_START,
            "test_build_tiny_model[model built]",
            **_cold("`steer-envs build-tiny-model PATH`", 5.55, "model built"),
        ),
    ]


def _cold(row: str, cpu_s: float, cache: str, target: float | None = None) -> dict[str, Any]:
    return {"row": row, "cpu_s": cpu_s, "wall_s": cpu_s * 1.1, "cache": cache, "target_cpu_s": target, "load_1min": 0.9}


def context(**changes: Any) -> dict[str, Any]:
    base = {
        "command": "python -m perf.suite",
        "scale": "quick",
        "date": "2026-12-05",
        "commit": "abc1234",
        "commit_after": "abc1234",
        "machine": {
            "cpu": "AMD EPYC",
            "cores": 2,
            "memory_gib": 23.5,
            "os": "Linux",
            "python": "3.11.7",
            "versions": {"numpy": "2.4.6"},
        },
        "load_before": [0.2, 0.3, 0.4],
        "load_after": [0.5, 0.4, 0.4],
        "wall_s": 720.0,
        "pytest_exit": 0,
        "optional": {"vLLM (CPU build)": "present"},
    }
    return {**base, **changes}


def record(outcomes: dict[str, dict[str, str]] | None = None, **context_changes: Any) -> dict[str, Any]:
    """The suite's record of a run (``--json``): every benchmark passed, plus ``outcomes`` (node id: outcome)."""
    entries = benchmarks()
    passed = {b["fullname"]: {"outcome": "passed", "reason": ""} for b in entries}
    return {"context": context(**context_changes), "benchmarks": entries, "outcomes": {**passed, **(outcomes or {})}}
