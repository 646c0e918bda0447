"""The sections of ``BENCHMARKS.md`` in page order (:data:`SECTIONS`): for each, the perf test file and the tests it
reports, the workload in words, and the function that turns that file's figures into rows and notes.

Why one registry: the suite runs exactly the files named here (:func:`suite_files`), so a benchmark that feeds the
page cannot be left out of the run, and a test of the page checks that every ``test_perf_*.py`` file is named.
Workload sizes, targets and limits are read from each benchmark's ``extra_info`` (the test records them beside its
figures), never typed here: a number on the page is a number of the run. The slower serving sections (in flight,
the real engine, the servers under attack) are in :mod:`.sections_serving`.
"""

from __future__ import annotations

from .page import Body, Figures, RunContext, Section, met, num, pct, times
from .sections_serving import SERVING_SECTIONS

ENV = "perf/test_perf_env.py"
RETRIEVAL = "perf/test_perf_retrieval.py"
SERVER = "perf/test_perf_server.py"
POOL = "perf/test_perf_pool.py"
VECTOR = "perf/test_perf_vector.py"
NOTES = "perf/test_perf_notes.py"
STEERER = "perf/test_perf_steerer.py"
CLI = "perf/test_perf_cli.py"
COLD_START = "perf/test_perf_cold_start.py"


# -- the env and retrieval -----------------------------------------------------------------------------------------
def env_step(f: Figures, c: RunContext) -> Body:
    rows, notes = [], []
    for e in f.named("test_env_steps_per_second_pass_policy"):
        share = e["retrieval_share"]
        rows.append(
            [
                "on" if e["cache"] else "off",
                num(e["steps_per_second"]),
                num(e["ms_per_step"], 3),
                pct(share),
                pct(1 - share),
                num(e["ms_per_search"], 2),
            ]
        )
        if e.get("target_overhead_ms") is not None:
            target, overhead = e["target_overhead_ms"], e["overhead_ms_per_step"]
            notes.append(
                f"Target: with the cache off, the simulator and the env cost at most {target:g} ms a step outside "
                f"the BM25 searches ({met(overhead <= target)}: {num(overhead, 3)} ms)."
            )
    if rows:
        e = f.named("test_env_steps_per_second_pass_policy")[0]
        notes.insert(0, f"Each row: {e['rounds']} rounds of {e['steps_per_round']:,} steps.")
    return Body(rows, notes)


def fork_cost(f: Figures, c: RunContext) -> Body:
    names = f.names("test_fork_cost")
    rows = [
        [f"turn {f.extra(n)['turn']}", num(f.stats(n)["mean"] * 1e6), num(f.extra(n)["transcript_chars"])]
        for n in names
    ]
    notes = []
    if len(names) >= 2:
        early, late = f.extra(names[0]), f.extra(names[-1])
        ratio = f.stats(names[-1])["mean"] / f.stats(names[0])["mean"]
        notes.append(
            f"Turn {late['turn']} ÷ turn {early['turn']}: {times(ratio)} the time per fork for "
            f"{late['transcript_chars'] / early['transcript_chars']:.0f}× the transcript. Limit: "
            f"{late['growth_limit']:g}× ({met(ratio <= late['growth_limit'])}; "
            "`test_fork_cost_does_not_grow_with_the_transcript` checks it on the best of three timings)."
        )
    return Body(rows, notes)


def single_vs_batched(f: Figures, c: RunContext) -> Body:
    found = f.named("test_single_vs_batched")
    rows = [[e["backend"], num(e["single_qps"]), num(e["batch_qps"]), times(e["batch_speedup"])] for e in found]
    notes = [f"{found[0]['queries']} hotpotqa test questions, k = {found[0]['k']}."] if found else []
    return Body(rows, notes)


def stepped_together(f: Figures, c: RunContext) -> Body:
    found = f.named("test_envs_stepped_together")
    rows = [
        [
            e["backend"],
            num(e["one_by_one_steps_per_s"]),
            num(e["together_steps_per_s"]),
            times(e["speedup"]),
            num(e["mean_batch"], 1),
        ]
        for e in found
    ]
    notes = [f"{found[0]['envs']} envs, {found[0]['steps']:,} env steps each way."] if found else []
    return Body(rows, notes)


#: the retrieval micro-benchmarks of test_perf_retrieval.py that time one call, by test name
RETRIEVAL_CALLS = {
    "test_bm25s_single_query": "bm25s, one query",
    "test_bm25s_batch_of_50": "bm25s, `batch_search` of 50 queries",
    "test_lucene_batch_of_50": "Lucene, `batch_search` of 50 queries",
    "test_rank_bm25_batch_of_5": "rank_bm25 (the reference implementation), 5 queries",
    "test_http_round_trip_single_query": "`http:` retriever against the server in this process, one query",
}


def retrieval_calls(f: Figures, c: RunContext) -> Body:
    rows = []
    for name, label in RETRIEVAL_CALLS.items():
        stats = f.stats(name)
        if stats:
            rows.append([label, num(stats["mean"] * 1e3, 2), num(stats["median"] * 1e3, 2), num(stats["rounds"])])
    return Body(rows)


def retrieval_server(f: Figures, c: RunContext) -> Body:
    e = f.extra("test_retrieval_server_throughput")
    if not e:
        return Body()
    base = e["servers"][0]["requests_per_s"]
    rows = [
        [
            s["name"],
            num(s["requests_per_s"]),
            times(s["requests_per_s"] / base),
            num(s["p50_ms"], 1),
            num(s["p99_ms"], 1),
            str(s["errors"]),
        ]
        for s in e["servers"]
    ]
    return Body(
        rows,
        [
            f"{e['clients']} clients, {e['requests_per_client']:,} requests per client per round, "
            f"{e['rounds']} rounds; the baseline commit is `{e['baseline_commit'][:7]}`. Today's server with the "
            "current `bm25.py` isolates the retriever: the same bm25s scores, a faster top-k selection."
        ],
    )


# -- worker pools and vector envs ----------------------------------------------------------------------------------
def labelling(f: Figures, c: RunContext) -> Body:
    found = f.named("test_q_labelling_throughput")
    rows = [
        [e["pool"], str(e["workers"]), num(e["states_per_minute"]), str(e["states"]), num(e["rollouts"])] for e in found
    ]
    if not found:
        return Body()
    rate = {(e["pool"], e["workers"]): e["states_per_minute"] for e in found}
    ratios = [
        f"{kind}: 2 workers ÷ 1 worker = {times(rate[(kind, 2)] / rate[(kind, 1)])}"
        for kind in ("processes", "ray")
        if (kind, 1) in rate and (kind, 2) in rate
    ]
    first = found[0]
    notes = [
        f"G = {first['G']} slow samples per state, N = {first['N']} continuations per branch. "
        + "; ".join(ratios)
        + "."
    ]
    return Body(rows, notes)


def make_vec(f: Figures, c: RunContext) -> Body:
    found = f.named("test_make_vec_steps_per_second")
    rows = [[e["mode"], str(e["num_envs"]), num(e["env_steps_per_second"])] for e in found]
    if not found:
        return Body()
    rate = {(e["mode"], e["num_envs"]): e["env_steps_per_second"] for e in found}
    notes = [f"{found[0]['vector_steps']:,} vector steps per row."]
    if ("async", 1) in rate and ("async", 2) in rate:
        notes[0] += f" async, 2 envs ÷ 1 env = {times(rate[('async', 2)] / rate[('async', 1)])}."
    return Body(rows, notes)


VECTOR_ENVS = {"concurrent": "`ConcurrentVectorEnv` (steer_envs.vector)", "sync": "`SyncVectorEnv`"}
EPISODES = {"search": "search, answer", "answer": "answer (no search)"}


def openai_executors(f: Figures, c: RunContext) -> Body:
    found = f.named("test_openai_requests_per_second")
    rows = [
        [
            VECTOR_ENVS[e["vector_env"]],
            str(e["num_envs"]),
            EPISODES[e["reply"]],
            num(e["requests_per_second"]),
            pct(e["share_of_ceiling"]),
            str(e["peak_in_flight"]),
            str(e["new_connections"]),
            str(e["requests"]),
        ]
        for e in found
    ]
    if not found:
        return Body()
    notes = [f"Server latency: {found[0]['latency_s'] * 1e3:.0f} ms; share = requests/s ÷ (N / latency)."]
    by_kind = {e["vector_env"]: e for e in found if e["reply"] == "search"}
    if {"concurrent", "sync"} <= set(by_kind):
        conc, sync = by_kind["concurrent"], by_kind["sync"]
        notes.append(
            f"Concurrent at N = {conc['num_envs']} ÷ sync at N = {sync['num_envs']}: "
            f"{conc['requests_per_second'] / sync['requests_per_second']:.0f}× the requests/s."
        )
    for e in found:
        if e.get("target_share") is not None:
            notes.append(
                f"Target: ≥ {pct(e['target_share'])} of N / latency at N = {e['num_envs']} from one process "
                f"({met(e['share_of_ceiling'] >= e['target_share'])}: {pct(e['share_of_ceiling'])}). Client CPU "
                "(env step, BM25 search, HTTP) is serial under the interpreter lock, so the share falls as the "
                "machine's load rises."
            )
    return Body(rows, notes)


def trainer(f: Figures, c: RunContext) -> Body:
    found = f.named("test_trainer_wall_time")
    rows = [[e["pool"], str(e["workers"]), num(e["seconds"], 1), str(e["config"])] for e in found]
    seconds = {e["workers"]: e["seconds"] for e in found}
    notes = []
    if 1 in seconds and 2 in seconds:
        notes.append(
            f"Speed-up with 2 workers (wall time with 1 ÷ wall time with 2): {times(seconds[1] / seconds[2])}."
        )
        if c.scale == "quick":
            notes[0] += (
                " The quick config lasts seconds, so worker start-up (spawning, loading the index) dominates it; the "
                "acceptance figure is the `--full` one."
            )
    return Body(rows, notes)


# -- models --------------------------------------------------------------------------------------------------------
NOTE_READS = {
    "test_read_an_unseen_note_warm": "unseen note, warm reader",
    "test_read_a_cached_note": "note read before (cache)",
    "test_first_read_in_a_fresh_reader": "first read in a fresh reader (model load)",
}


def note_reads(f: Figures, c: RunContext) -> Body:
    rows = [
        [label, num(f.stats(name)["mean"] * 1e3, 3), num(f.stats(name)["median"] * 1e3, 3)]
        for name, label in NOTE_READS.items()
        if f.stats(name)
    ]
    warm, notes = f.stats("test_read_an_unseen_note_warm"), []
    target = f.extra("test_read_an_unseen_note_warm").get("target_ms")
    if warm and target is not None:
        notes.append(
            f"Target: a warm read of a new note under {target:g} ms ({met(warm['mean'] * 1e3 < target)}: "
            f"{warm['mean'] * 1e3:.2f} ms)."
        )
    return Body(rows, notes)


def _steerer_row(e: dict, path: str) -> list[str]:
    model = f"{e['model']} (hidden {e['hidden_size']}, {e['layers']} layers)"
    if path == "fast":
        return [
            f"fast path: {e['observations']} observations (mean {e['prompt_tokens_mean']:.0f} prompt tokens)",
            model,
            str(e["threads"]),
            f"{num(e['one_at_a_time_s'], 2)} s (one forward each)",
            f"{num(e['batched_s'], 2)} s (batches of {e['batch_size']})",
            times(e["speedup"]),
        ]
    return [
        f"slow path: G = {e['G']} samples of {e['max_think_tokens']} reasoning tokens ({e['prompt_tokens']}-token "
        "prompt)",
        model,
        str(e["threads"]),
        f"{num(e['token_loop_s'], 2)} s (token loop)",
        f"{num(e['generate_s'], 2)} s (one generate call)",
        times(e["speedup"]),
    ]


STEERER_PATHS = {"fast": "test_fast_path_batched_vs_one_at_a_time", "slow": "test_slow_path_generate_vs_token_loop"}


def steerer(f: Figures, c: RunContext) -> Body:
    rows, targets = [], []
    for path, test in STEERER_PATHS.items():
        for e in f.named(test):
            rows.append(_steerer_row(e, path))
            if e["model"] == e["target_model"] and e["threads"] == 1:
                ok = e["speedup"] >= e["target_speedup"]
                targets.append(f"{path} path ≥ {e['target_speedup']:g}× ({met(ok)}: {times(e['speedup'])})")
    notes = []
    if targets:
        notes.append(
            f"Targets on the {f.named(STEERER_PATHS['fast'])[0]['target_model']} model: " + "; ".join(targets) + "."
        )
    notes.append(
        "Why the paths differ on a CPU: a forward pass over a prompt of a few hundred tokens is compute-bound on a "
        "core, so a padded batch saves only the per-call overhead; decoding one token per forward pass is "
        "overhead-bound, and one `generate` call computes the prompt's KV cache once instead of once per sample. "
        "With two threads on a loaded machine, contention penalises the old paths' many small calls. On a GPU a "
        "batch costs about one forward pass: `python -m perf.gpu_check` measures that ratio "
        "(`fast_path_batching_speedup`) there; it needs a GPU and is not part of this page."
    )
    return Body(rows, notes)


def cli(f: Figures, c: RunContext) -> Body:
    rows, notes = [], []
    for name in f.names("test_top_level_help") + f.names("test_eval_help"):
        e, s = f.extra(name), f.stats(name)
        rows.append(
            [f"`{e['command']}`", num(s["mean"], 2), num(s["min"], 2), num(e["cpu_s_mean"], 2), str(e["rounds"])]
        )
        target = e.get("target_cpu_s")
        if target is not None:
            notes.append(
                f"Target: `{e['command']}` under {target:g} s of CPU ({met(e['cpu_s_mean'] < target)}: "
                f"{e['cpu_s_mean']:.2f} s). CPU time is the wall time of a free machine; other jobs inflate the wall "
                "time, not it."
            )
    return Body(rows, notes)


#: the cold-start rows in page order
COLD_START_TESTS = (
    "test_first_step_with_a_text_note",
    "test_serve_env_until_health_answers",
    "test_first_eval_episode",
    "test_build_tiny_model",
)


def cold_start(f: Figures, c: RunContext) -> Body:
    found = [f.extra(name) for test in COLD_START_TESTS for name in f.names(test) if f.extra(name)]
    rows, notes = [_cold_row(e) for e in found], []
    for e in found:
        if e.get("target_cpu_s") is not None:
            notes.append(
                f"Target: {e['row']} ({e['cache']} cache) within {e['target_cpu_s']:g} s of CPU "
                f"({met(e['cpu_s'] <= e['target_cpu_s'])}: {e['cpu_s']:.2f} s)."
            )
    notes.append(
        "An empty cache pays once for what later processes read from disk: the BM25 index of the corpus, the note "
        "reader's prototype vectors and its fitted probe (`$STEER_ENVS_CACHE`). A warm process never imports "
        "scikit-learn (the probe is applied with NumPy), and `serve-env` does not import OpenEnv's Gradio web "
        "interface, which it does not serve."
    )
    return Body(rows, notes)


def _cold_row(e: dict) -> list[str]:
    return [e["row"], e["cache"], num(e["cpu_s"], 2), num(e["wall_s"], 2), num(e["load_1min"], 1)]


SECTIONS: tuple[Section, ...] = (
    Section(
        "Env step (`SearchSteering-v0`, `sim:default`, pass policy)",
        ENV,
        ("test_env_steps_per_second_pass_policy",),
        "steps on the test split with the simulator's retrieval cache off (every search hits BM25) and on; the "
        "share of step time inside the retriever.",
        ("retrieval cache", "steps/s", "ms/step", "share in BM25", "share in simulator + env", "ms per search"),
        env_step,
        select="steps_per_second",
    ),
    Section(
        "`fork()` cost",
        ENV,
        ("test_fork_cost", "test_fork_cost_does_not_grow_with_the_transcript"),
        "an executor that never stops searching, forked at an early and a late executor turn.",
        ("fork at", "µs per fork (mean)", "transcript chars"),
        fork_cost,
        select="fork",
    ),
    Section(
        "BM25: single vs batched queries, bm25s vs Lucene",
        RETRIEVAL,
        ("test_single_vs_batched",),
        "the same queries one call each, then in one `batch_search` (identical hits asserted).",
        ("backend", "queries/s one by one", "queries/s in one batch", "batch speed-up"),
        single_vs_batched,
        select="single_vs_batched",
    ),
    Section(
        "Batched retrieval across envs (retrieval cache off)",
        RETRIEVAL,
        ("test_envs_stepped_together",),
        'envs stepped one after the other vs together with `retriever="batched:<backend>"` and `step_together` '
        "(identical rewards asserted).",
        ("backend", "env steps/s one by one", "env steps/s together", "speed-up", "mean queries per retriever call"),
        stepped_together,
        select="stepped_together",
    ),
    Section(
        "Retrieval calls",
        RETRIEVAL,
        tuple(RETRIEVAL_CALLS),
        "one call of each retriever, timed by pytest-benchmark over as many rounds as it chose.",
        ("call", "ms (mean)", "ms (median)", "rounds"),
        retrieval_calls,
        select=" or ".join(name.removeprefix("test_") for name in RETRIEVAL_CALLS),
    ),
    Section(
        "Retrieval server under concurrent clients",
        SERVER,
        ("test_retrieval_server_throughput",),
        "Search-R1 requests (one query each, with scores) over keep-alive connections; every server in its own "
        "process over the same bm25s index; rounds alternate between servers, medians over rounds. \"Today's "
        'server" is the http.server implementation checked out from git at the baseline commit '
        "(`python -m perf.retrieval_servers` runs the same comparison outside pytest).",
        ("server", "requests/s", "× today", "p50 ms", "p99 ms", "errors"),
        retrieval_server,
    ),
    Section(
        "q(s) labelling throughput",
        POOL,
        ("test_q_labelling_throughput",),
        "bank states of `sim:default` (train split), the untrained steerer's slow samples for each, continuations "
        "per branch; worker start-up excluded; labels asserted equal to the local pool's.",
        ("pool", "workers", "states/min", "states", "rollouts"),
        labelling,
        select="labelling",
    ),
    Section(
        "`gymnasium.make_vec`",
        VECTOR,
        ("test_make_vec_steps_per_second",),
        "pass actions, test split, retrieval cache on.",
        ("mode", "envs", "env steps/s"),
        make_vec,
        select="make_vec",
    ),
    Section(
        "Many episodes in flight: `openai:` executors against a fixed server latency",
        VECTOR,
        ("test_openai_requests_per_second",),
        "SearchSteering-v0 envs (pass actions, same-step autoreset, test split) on `openai:` executors against a "
        "loopback OpenAI-compatible server in its own process that answers every request after a fixed latency: "
        "episodes of a search then an answer (real BM25 searches between the requests), and one-answer episodes "
        "(no search: HTTP and env work alone).",
        (
            "vector env",
            "envs (N)",
            "episode",
            "requests/s",
            "share of N / latency",
            "peak in flight",
            "new connections",
            "requests",
        ),
        openai_executors,
        select="openai",
    ),
    SERVING_SECTIONS["in_flight"],
    Section(
        "Steering trainer wall time",
        POOL,
        ("test_trainer_wall_time",),
        "the steering trainer with the local pool and with worker processes (`--full`: the acceptance config, the "
        "`SteeringConfig` defaults).",
        ("pool", "workers", "seconds", "config"),
        trainer,
        select="trainer",
    ),
    Section(
        "Reading a note (`steer_envs.notes`, MiniLM + probe)",
        NOTES,
        tuple(NOTE_READS),
        "the simulator's reader on notes it has not seen (one MiniLM forward each), on a cached note, and cold.",
        ("read", "ms (mean)", "ms (median)"),
        note_reads,
    ),
    Section(
        "LLM steerer: batched vs one at a time (random Qwen2 models, CPU)",
        STEERER,
        tuple(STEERER_PATHS.values()),
        "`CausalLMSteerer.fast_scores` on bank-like states of `sim:default` vs the former "
        "one-forward-per-observation loop (equal z asserted), and `_sample_thinks` (one `generate` call with "
        "`num_return_sequences`, the prompt's KV cache computed once) vs as many runs of the former token-at-a-time "
        "`_sample_think` loop (copied in the benchmark file). Random Qwen2-architecture models built from a config.",
        ("workload", "model", "torch threads", "before", "now", "speed-up"),
        steerer,
    ),
    SERVING_SECTIONS["engine"],
    SERVING_SECTIONS["served_adapter"],
    SERVING_SECTIONS["hostile_load"],
    Section(
        "Cold start",
        COLD_START,
        COLD_START_TESTS,
        "each row a fresh interpreter, from its start: the first step of `SearchSteering-v0` with a text note "
        "(`gym.make`, `reset`, `step(note)`), `serve-env` until `GET /health` answers (it builds and steps one env "
        "first, so the first session's note is read at once), `steer-envs eval` of one episode to its exit, and "
        "`build-tiny-model`. CPU seconds of the process and its children (other jobs inflate the wall time, not "
        "them); `warm`: the suite's cache, `empty`: a new one.",
        ("from a fresh process", "cache", "CPU s", "wall s", "load (1 min)"),
        cold_start,
    ),
    Section(
        "Command-line start-up",
        CLI,
        (
            "test_top_level_help",
            "test_top_level_help_costs_under_the_target_in_cpu_time",
            "test_top_level_help_imports_no_command_module",
            "test_eval_help",
        ),
        "each round a fresh interpreter, as a user's shell starts one (the console script's own start-up included); "
        "`steer-envs --help` imports no command's module, `eval --help` imports the evaluation harness and every "
        "method's options.",
        ("command", "wall s (mean)", "wall s (min)", "CPU s (mean)", "rounds"),
        cli,
    ),
)


def suite_files() -> list[str]:
    """The perf test files the suite runs: every file a section reports, once, in page order."""
    return list(dict.fromkeys(section.file for section in SECTIONS))
