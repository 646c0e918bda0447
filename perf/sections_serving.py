"""The serving sections of ``BENCHMARKS.md`` (:data:`SERVING_SECTIONS`, placed in page order by
:mod:`.sections`): episodes in flight against a loopback server, the eval path against the real engine, the served
LoRA adapter against peft, and the servers under hostile load.

Their prose explains why a figure is what it is; every number in it is read from the run's ``extra_info``, so the
explanation is true of whichever run the page shows.
"""

from __future__ import annotations

from typing import Any

from .page import Body, Figures, RunContext, Section, met, num, pct, times

IN_FLIGHT = "perf/test_perf_inflight.py"
ENGINE = "perf/test_perf_engine.py"
SERVED_ADAPTER = "perf/test_perf_served_adapter.py"
HOSTILE = "perf/test_perf_hostile_load.py"

MIB = 1 << 20


# -- episodes in flight --------------------------------------------------------------------------------------------
#: the rows of test_perf_inflight.py in page order: each latency's eval path, then the vector envs beside it
IN_FLIGHT_RUNS = tuple(
    name
    for latency in ("lognormal-1s", "fixed-100ms")
    for name in (
        f"test_eval_rollout_path_in_flight[{latency}-greenlets]",
        f"test_eval_rollout_path_in_flight[{latency}-threads]",
        f"test_async_pool_in_flight[{latency}-greenlets]",
        f"test_async_pool_in_flight[{latency}-threads]",
        f"test_vector_envs_beside[{latency}-concurrent-256]",
        f"test_vector_envs_beside[{latency}-sync-{8 if latency == 'lognormal-1s' else 32}]",
    )
) + ("test_eval_on_the_processes_pool",)


def latency_label(e: dict[str, Any]) -> str:
    if e["cv"]:
        return f"lognormal, mean {e['mean_latency_s']:g} s, CV {e['cv']:g}"
    return f"fixed {e['mean_latency_s'] * 1e3:g} ms"


def _in_flight_row(e: dict[str, Any]) -> list[str]:
    share = e["share_of_ceiling"]
    return [
        latency_label(e),
        e["path"],
        str(e["in_flight"]),
        num(e["requests_per_second"], 1),
        pct(share, 0 if share >= 0.1 else 1),
        num(e["cpu_ms_per_request"], 2),
        str(e["peak_in_flight"]),
        num(e["window_s"], 1),
        num(e["load_1min"], 1),
    ]


def _in_flight_targets(found: list[dict[str, Any]]) -> list[str]:
    notes = []
    for e in found:
        if e.get("target_share") is None:
            continue
        who = "the async pool" if e["path"].startswith("AsyncPoolEnv") else "the eval path"
        notes.append(
            f"Target at {latency_label(e)}: {who} ≥ {pct(e['target_share'])} of {e['in_flight']} / latency "
            f"({met(e['share_of_ceiling'] >= e['target_share'])}: {pct(e['share_of_ceiling'])})."
        )
        if not e["cv"]:
            notes[-1] += (
                f" The client's CPU per request, {e['cpu_ms_per_request']:.2f} ms under one interpreter lock, bounds "
                f"one process at about {1e3 / e['cpu_ms_per_request']:,.0f} requests/s."
            )
    return notes


def _barrier(found: list[dict[str, Any]]) -> str:
    """What the per-step barrier costs, with the lognormal concurrent row's own timing when it ran."""
    text = (
        "**What the barrier costs.** `make_concurrent_vec` steps all N envs and then waits for all: each vector step "
        "lasts as long as its slowest request, and with a heavy-tailed latency the slowest of N draws is several "
        "times the mean"
    )
    step = next((e for e in found if e["path"] == "make_concurrent_vec" and e["cv"]), None)
    if step:
        text += (
            f" ({step['vector_steps']} vector steps took {step['window_s']:.1f} s here against a mean latency of "
            f"{step['mean_latency_s']:g} s)"
        )
    return text + (
        ", where the eval path keeps every slot busy. At a fixed latency every request is as slow as the slowest, so "
        "the barrier costs little and both paths are bound by client CPU. `SyncVectorEnv` sends one request at a "
        "time, so its rate is 1 / latency whatever N; a `--pool processes` worker runs one episode at a time, so its "
        "requests in flight are its worker count."
    )


def _engines(found: list[dict[str, Any]]) -> list[str]:
    """Client CPU per request on one thread (greenlets) against threads, per path and latency, from this run."""
    pairs = []
    for e in found:
        twin = next((t for t in found if t["path"] == _threads_twin(e["path"]) and t["cv"] == e["cv"]), None)
        if "greenlets" in e["path"] and twin:
            ratio = times(twin["cpu_ms_per_request"] / e["cpu_ms_per_request"])
            pairs.append(
                f"{e['path'].split(' (')[0]} at {latency_label(e)}: {e['cpu_ms_per_request']:.2f} ms on greenlets, "
                f"{twin['cpu_ms_per_request']:.2f} on threads ({ratio})"
            )
    if not pairs:
        return []
    return [
        "**One thread or many.** Client CPU per request, " + "; ".join(pairs) + ". Between threads the interpreter "
        "lock changes hands several times a request (a worker wakes, sends, wakes on the reply, hands the result "
        "over); on one thread none of that happens, which matters where the client's CPU is the bound (the fixed "
        "latency's hundreds of requests a second), not where the server's latency is."
    ]


def _threads_twin(path: str) -> str:
    """The threads row's label beside a greenlets row's."""
    return path.replace("greenlets pool, the default", "threads pool").replace("greenlets, the default", "threads")


def in_flight(f: Figures, c: RunContext) -> Body:
    found = [f.extra(name) for name in IN_FLIGHT_RUNS if f.extra(name)]
    notes = _in_flight_targets(found)
    if found:
        notes.append(_barrier(found))
    notes += _engines(found)
    if any(e["share_of_ceiling"] > 1 for e in found):
        notes.append("A share above 100 % is the draw: that window's requests drew a mean latency under the mean.")
    return Body([_in_flight_row(e) for e in found], notes)


def _pool_size(e: dict[str, Any]) -> str:
    """The eval's pool as the record names it (records before the greenlets pool name none: they ran on threads)."""
    pool = e.get("pool", "threads")
    return f"{e['in_flight']} {'tasks of a greenlets pool' if pool == 'greenlets' else 'threads'}"


# -- the real engine -----------------------------------------------------------------------------------------------
def _throughput_row(label: str, t: dict[str, Any]) -> list[str]:
    return [
        label,
        num(t["steady_tokens_per_s"]),
        f"{t['steady_window_s']:.1f} s",
        num(t["run_tokens_per_s"]),
        f"{t['run_s']:.1f} s",
        f"{t['cpu_ms_per_request']:.2f} ms",
        num(t["requests"]),
        num(t["completion_tokens"]),
    ]


def _model(e: dict[str, Any]) -> str:
    m = e["model"]
    return f"hidden {m['hidden_size']}, {m['heads']} heads, context {m['context']:,}, {m['dtype']}"


def engine(f: Figures, c: RunContext) -> Body:
    e = f.extra("test_eval_path_against_vllm_vs_async_replay")
    if not e:
        return Body()
    replays = [key.removeprefix("replay_") for key in e if key.startswith("replay_")]
    rows = [
        _throughput_row("the eval path (first run, recorded)", e["eval"]),
        *(_throughput_row(f"{name} replay, concurrency {e['in_flight']}", e[f"replay_{name}"]) for name in replays),
        _throughput_row("the eval path (again, after the replay)", e["eval_again"]),
    ]
    version = e.get("vllm_version") or "(version not reported)"
    mode = " in eager mode (no graph compilation: the quick scale)" if e.get("eager") else ""
    notes = [
        f"vLLM {version}{mode} serving a tiny random model ({_model(e)}) on loopback; `evaluate` (`no_supervision`, "
        f"the `auto` pool: {_pool_size(e)}) with the executor `{e['executor']}`, {e['episodes']:,} nq test "
        f"episodes of at most {e['max_turns']} turns, {e['max_new_tokens']} new tokens per request. The steady "
        f"window runs from the {e['in_flight']}th finished request to the {e['in_flight'] * e['max_turns']}th from "
        f"last. Load (1 min) before: {e['before']['load_1min']:.1f}, after: {e['after']['load_1min']:.1f}, on "
        f"{e['before']['cores']} cores.",
        f"**Eval path ÷ plain async client ({e['baseline']}): {pct(e['steady_ratio'])} steady "
        f"({pct(e['run_ratio'])} whole run), target ≥ {pct(e['target_ratio'])}: "
        f"{met(e['steady_ratio'] >= e['target_ratio'])}.**",
    ]
    if e["steady_ratio"] > 1:
        notes.append(
            f'Read a ratio above 100 % as "the eval path is not the bottleneck", not as {e.get("pool", "threads")} '
            "beating asyncio in general: the server shares the machine's cores with both clients."
        )
    return Body(rows, notes)


# -- the served adapter --------------------------------------------------------------------------------------------
def served_adapter(f: Figures, c: RunContext) -> Body:
    e = f.extra("test_served_adapter_equals_the_local_peft_model")
    if not e:
        return Body()
    check, base = e["check"], e["base_check"]
    rows = [
        ["fast-path z = log P(yes) − log P(no)", f"{check['states']} states", f"{check['fast_max_abs_diff']:.1e}"],
        [
            "slow-path log π(sample) (reasoning + NAME + ARGUMENT)",
            f"{check['slow_samples']} samples",
            f"{check['slow_max_abs_diff']:.1e}",
        ],
        [
            "per-token log-probabilities of every scored row",
            f"{check['slow_tokens']:,} tokens",
            f"{check['token_max_abs_diff']:.1e}",
        ],
    ]
    version = e.get("vllm_version") or "(version not reported)"
    margin = base["fast_max_abs_diff"] / base["tolerance"]
    notes = [
        f"A rank-{e['adapter_rank']} LoRA over a tiny random model ({_model(e)}), served by vLLM {version}.",
        f"Tolerance {check['tolerance']:.0e} (fp32 on both sides): {met(check['ok'])}. The base model served without "
        f"the adapter, on {base['states']} of the states, differs by {base['fast_max_abs_diff']:.1e} on the fast "
        f"path ({margin:,.0f}× the tolerance; the test asks for more than {e['base_margin']}×), so the check can "
        "fail.",
    ]
    return Body(rows, notes)


# -- servers under hostile load ------------------------------------------------------------------------------------
SERVERS = {"env": "`serve-env` (HTTP sessions)", "retriever": "`serve-retriever` (`/retrieve`)"}
SERVER_NAMES = {"env": "`serve-env`", "retriever": "`serve-retriever`"}


def _hostile_row(server: str, row: dict[str, Any]) -> list[str]:
    u, a = row["unloaded"], row["loaded"]
    return [
        SERVERS.get(server, server),
        num(row["requests"]),
        num(u["p50_ms"], 2),
        num(u["p99_ms"], 2),
        num(a["p50_ms"], 2),
        num(a["p99_ms"], 2),
        times(row["p99_ratio"]),
        str(row["refused"]),
    ]


def _attack_workload(e: dict[str, Any]) -> str:
    cfg, limits = e["config"], e["limits"]
    per_s = 1 / cfg["flood_interval_s"]
    body = limits["body_bytes"]
    return (
        f"{cfg['good_clients']} good clients per server, each on one keep-alive connection at {cfg['rate']:g} "
        f"requests/s. Unloaded and loaded windows of {cfg['window_s']:g} s alternate, {cfg['rounds']} of each; the "
        f"first {cfg['settle_s']:g} s of each window is left out. In the loaded windows a third process, at `nice 19` "
        "(on a small machine its own CPU would otherwise be charged to the servers), attacks each server with "
        f"{cfg['header_slowloris']} header slowloris connections (a request line, then one header byte every "
        f"{cfg['trickle_s']:g} s); {cfg['body_slowloris']} body slowloris connections (complete headers announcing "
        f"{cfg['slow_body_bytes']:,} bytes, then one body byte every {cfg['trickle_s']:g} s); an announced "
        f"{cfg['announced_bytes'] / MIB:g} MiB body and an endless chunked one (a valid JSON start, so the server "
        f"reads to its limit), {per_s:g} times a second each; and bodies at the size limit ({body['env'] / MIB:g} "
        f"MiB for `serve-env`, {body['retriever'] / MIB:g} MiB for `serve-retriever`), {per_s:g} times a second "
        f"each: nested half their size deep, and nested at the {limits['max_depth']}-level limit, repeated."
    )


def _attack_outcomes(e: dict[str, Any]) -> str:
    parts = [
        f"{SERVER_NAMES.get(server, server)}: "
        + (", ".join(f"{n:,} × {kind}" for kind, n in outcomes.items()) or "nothing recorded")
        for server, outcomes in e["attack"].items()
    ]
    return "What the attackers got back (attack: status or connection outcome): " + "; ".join(parts) + "."


def _cpu(e: dict[str, Any]) -> str:
    cpu = e["cpu_cores"]
    servers = [
        f"{SERVER_NAMES.get(kind, kind)} {use['unloaded']:.2f} → {use['loaded']:.2f}"
        for kind in e["servers"]
        if (use := cpu.get(f"{kind} server"))
    ]
    attackers = cpu.get("attackers", {}).get("loaded")
    return (
        "CPU use in cores, unloaded → under attack: "
        + ", ".join(servers)
        + ("" if attackers is None else f"; the attackers used {attackers:.2f}")
        + "."
    )


def hostile_load(f: Figures, c: RunContext) -> Body:
    e = f.extra("test_good_clients_hold_under_hostile_load")
    if not e:
        return Body()
    rows = [_hostile_row(server, row) for server, row in e["servers"].items()]
    limit, limits = e["p99_ratio_limit"], e["limits"]
    held = [s for s, r in e["servers"].items() if not r["refused"] and r["p99_ratio"] <= limit]
    verdict = "met on every server" if len(held) == len(e["servers"]) else "not met in this run"
    notes = [
        _attack_workload(e),
        f"**Acceptance (p99 under attack within {limit:g}× unloaded, no good request refused): {verdict}.** " + _cpu(e),
        _attack_outcomes(e),
        f"The servers time out a request's headers after {limits['header_timeout_s']:g} s and its body after "
        f"{limits['body_timeout_s']:g} s (408, connection closed).",
        "Why it holds: bodies are measured on their raw text before `json.loads`, and refused from the first part "
        "that has arrived (`steer_envs.validation.scan_json`, `PrefixChecks`). Decoding first is what fails: here a "
        f"body of {limits['body_bytes']['env'] / MIB:g} MiB nested one level past the limit and repeated took "
        f"{e['decode_s']:.2f} s to decode, time every other client of the event loop would wait.",
        f"Servers ready in {e['server_start_s']:.1f} s; the benchmark took {e['wall_s']:.0f} s in all.",
    ]
    return Body(rows, notes)


SERVING_SECTIONS: dict[str, Section] = {
    "in_flight": Section(
        "Episodes in flight without a per-step barrier: lognormal and fixed latency",
        IN_FLIGHT,
        (
            "test_eval_rollout_path_in_flight",
            "test_async_pool_in_flight",
            "test_vector_envs_beside",
            "test_eval_on_the_processes_pool",
        ),
        "`evaluate` (no_supervision, nq test; the `auto` pool, the default: a greenlets pool of one task per request "
        "the backend keeps in flight, all on one thread; beside it a threads pool of as many threads) and the async "
        "pool (`AsyncPoolEnv`: the first few envs ready per `recv()`, sent straight back; on its default engine, "
        "greenlets, and on threads), beside `make_concurrent_vec` and `SyncVectorEnv` (pass actions, same-step "
        "autoreset), "
        "against a loopback OpenAI-compatible server in its own process (one asyncio loop; search-then-answer "
        "episodes, real BM25 between the requests, through the process's search cache as every episode's search) "
        "whose latency is lognormal or fixed. Requests/s at the server "
        "over the steady state (the eval path: after the first N episodes' requests, before the last N's; vector "
        "envs: the timed steps), as a share of N / mean latency; client CPU per request over the same window (all "
        "threads of the client process).",
        (
            "latency",
            "path",
            "in flight",
            "requests/s",
            "share of N / latency",
            "client CPU ms / request",
            "peak in flight",
            "window s",
            "load (1 min)",
        ),
        in_flight,
    ),
    "engine": Section(
        "The eval path against the real engine: vLLM, tiny model",
        ENGINE,
        ("test_eval_path_against_vllm_vs_async_replay",),
        "`evaluate` with an `openai:` executor served by vLLM, beside a plain asyncio client (aiohttp: one "
        "`ClientSession`, one connection per worker coroutine) that posts the very bodies the eval posted (kept by "
        "the backend's request recorder, `OpenAIBackend.recorder`), in the same order at the same concurrency "
        "(`STEER_ENVS_ENGINE_REPLAYS=aiohttp,httpx` adds httpx). The same work both ways: identical bodies, greedy "
        "decoding, the server's prefix cache emptied before each run (`POST /reset_prefix_cache`, vLLM's dev mode). "
        "The eval runs again after the replay and the ratio takes the lower of the two eval runs. Completion tokens "
        "are the server's `usage.completion_tokens`.",
        (
            "client",
            "completion tokens/s, steady",
            "steady window",
            "completion tokens/s, whole run",
            "whole run",
            "client CPU per request",
            "requests",
            "completion tokens",
        ),
        engine,
    ),
    "served_adapter": Section(
        "Served LoRA adapter vs the local peft model (vLLM)",
        SERVED_ADAPTER,
        ("test_served_adapter_equals_the_local_peft_model",),
        "a `CausalLMSteerer` with a LoRA over a tiny random model, its adapter weights moved off zero, saved by "
        "`save_adapter` and served by vLLM (`--enable-lora --lora-modules`); the local side loads the same folder "
        "through peft. `agents.steering.served_check.check_served_adapter` scores the token ids the local steerer "
        "scores on decision states of the state bank (`sim:default`): each scored token forced with "
        "`allowed_token_ids`, one per request, its log-probability read off the raw logits (`prompt_logprobs`, the "
        "obvious way to ask, crashes the CPU build's LoRA logits path).",
        ("quantity", "compared", "largest \\|served − local\\|"),
        served_adapter,
    ),
    "hostile_load": Section(
        "Servers under hostile load: good clients beside slowloris, oversized and deeply nested requests",
        HOSTILE,
        ("test_good_clients_hold_under_hostile_load",),
        "`serve-env` (`GuidedSearch-v0`, text actions) and `serve-retriever` (bm25s over the corpus), each in its "
        "own process with its command line's default limits; good clients measured unloaded and under attack, side "
        "by side (`python -m perf.hostile_load --json FILE` runs the same outside pytest). On "
        "`serve-env` the good clients run HTTP sessions (reset, two searches, an answer, repeat); on "
        "`serve-retriever` they send `/retrieve` with one query.",
        (
            "server",
            "good requests",
            "unloaded p50 ms",
            "unloaded p99 ms",
            "under attack p50 ms",
            "under attack p99 ms",
            "p99 ratio",
            "refused",
        ),
        hostile_load,
    ),
}
