"""The served steerer (``openai:`` models) over real HTTP on loopback: the project's OpenAI-compatible server
wrapping the tiny random model (fast), a scripted server replying with crafted outputs (parsing), and, marked
slow, ``steer-envs eval --method steering_zero_shot:model=openai:gemma-3-270m@URL`` against the packaged Gemma."""

from __future__ import annotations

import json
import math
import urllib.request

import pytest
import torch

from agents.steering.backbones import backbone_for_model, build_steerer
from agents.steering.causal_lm import FAST_QUESTION
from agents.steering.interventions import options_from_catalogue
from agents.steering.served import EvaluationOnlyError, ServedSteerer, parse_intervention
from baselines.registry import MethodContext, build_policy
from steer_envs.errors import SteerEnvsError
from steer_envs.llm.base import logsumexp
from tests.agents.support import eval_in_subprocess
from tests.llm.support import FaultServer
from tests.servers.openai_server import OpenAICompatibleServer

NAMES = ["refocus", "stop_repeating", "answer_now", "search_for"]


@pytest.fixture(scope="module")
def context():
    return MethodContext(benchmarks=("nq",))


@pytest.fixture(scope="module")
def options(context):
    env = context.make_env(split="dev", action_mode="text")
    try:
        return options_from_catalogue(env.unwrapped.catalogue)
    finally:
        env.close()


@pytest.fixture(scope="module")
def observations(context):
    """Real observations of SearchSteering-v0 (the goal and a growing transcript)."""
    env = context.make_env(split="dev", action_mode="text")
    obs, _ = env.reset(seed=3)
    out = [obs]
    for _ in range(2):
        obs, _, terminated, truncated, _ = env.step("pass")
        out.append(obs)
        if terminated or truncated:
            break
    env.close()
    return out


@pytest.fixture(scope="module")
def tiny_server(tiny_backend):
    with OpenAICompatibleServer(tiny_backend, model_name="tiny") as server:
        yield server


def _server_table(server, prompt: str, k: int) -> dict[str, float]:
    """The first generated token's top-k table, read straight from the server's JSON."""
    body = json.dumps({"model": "tiny", "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": k}).encode()
    req = urllib.request.Request(
        f"{server.base_url}/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["choices"][0]["logprobs"]["top_logprobs"][0]


# -- fast path --------------------------------------------------------------------------------------------------
def test_fast_path_z_is_the_servers_yes_no_log_odds(tiny_server, tiny_backend, options, observations):
    k = len(tiny_backend.tokenizer)  # the whole vocabulary: both answers are in the table
    steerer = ServedSteerer(options, tiny_server.spec, top_logprobs=k)
    z = steerer.fast_scores(observations)
    assert z.shape == (len(observations),) and not z.requires_grad
    for obs, got in zip(observations, z.tolist()):
        table = _server_table(tiny_server, steerer.prompt_text(obs, FAST_QUESTION), k)
        yes = logsumexp([v for t, v in table.items() if t.strip() == "yes"])
        no = logsumexp([v for t, v in table.items() if t.strip() == "no"])
        assert math.isfinite(yes) and math.isfinite(no)
        assert got == pytest.approx(yes - no, abs=1e-5)
        local = tiny_backend.next_token_logprobs([steerer.prompt_text(obs, FAST_QUESTION)], ["yes", "no"])[0]
        assert got == pytest.approx(local["yes"] - local["no"], abs=1e-4)  # the model's own log-odds
    assert len(set(round(v, 6) for v in z.tolist())) > 1  # the transcript changes the score
    assert steerer.stats.fast_scores == len(observations) and steerer.stats.fast_candidate_missing == 0
    # "auto" on a server without vLLM's /tokenize: by characters, and it says so
    assert steerer.fit == "chars" and steerer.stats.fit_by_tokens == 0 and steerer.build_spec()["fit"] == "chars"


def test_fit_in_tokens_needs_a_server_that_tokenises(tiny_server, options, observations):
    steerer = ServedSteerer(options, tiny_server.spec, fit="tokens")
    with pytest.raises(SteerEnvsError, match=r"POST /tokenize.*fit=chars"):
        steerer.fast_scores(observations[:1])


def test_fast_path_counts_answers_missing_from_a_short_table(tiny_server, options, observations):
    steerer = ServedSteerer(options, tiny_server.spec, top_logprobs=2)
    z = steerer.fast_scores(observations[:1])
    table = _server_table(tiny_server, steerer.prompt_text(observations[0], FAST_QUESTION), 2)
    missing = sum(not any(t.strip() == c for t in table) for c in ("yes", "no"))
    assert steerer.stats.fast_candidate_missing == missing
    assert math.isfinite(float(z[0]))
    if missing == 2:  # both floored to the table's smallest log-prob: no evidence either way
        assert float(z[0]) == 0.0


# -- slow path --------------------------------------------------------------------------------------------------
def test_slow_path_over_http_gives_a_valid_action_and_is_seeded(tiny_server, options, observations):
    steerer = ServedSteerer(options, tiny_server.spec, max_think_tokens=12, max_line_tokens=8)
    obs = observations[-1]
    first = steerer.sample_slow(obs, 2, torch.Generator().manual_seed(5))
    again = steerer.sample_slow(obs, 2, torch.Generator().manual_seed(5))
    assert [s.payload["output"] for s in first] == [s.payload["output"] for s in again]
    for s in first:
        assert s.option is None or s.option in steerer.options
        assert "Intervention: " in s.payload["output"]  # the grammar head is forced after the reasoning
        assert s.payload["parsed"] == parse_intervention(s.payload["output"], steerer.names).ok
        assert s.to_action("discrete") in range(len(options) + 1)
    failures = sum(not s.payload["parsed"] for s in first + again)
    assert steerer.stats.slow_samples == 4 and steerer.stats.parse_failures == failures
    greedy = steerer.sample_slow(obs, 1, torch.Generator().manual_seed(1), greedy=True)[0]
    other = steerer.sample_slow(obs, 1, torch.Generator().manual_seed(2), greedy=True)[0]
    assert greedy.payload["output"] == other.payload["output"]  # greedy ignores the seed


@pytest.mark.parametrize(
    "text, name, argument, ok",
    [
        ("the agent loops.</think>\nIntervention: stop_repeating", "stop_repeating", "", True),
        ("x</think>\nintervention:   REFOCUS  ", "refocus", "", True),
        ("x</think>\nIntervention: **answer now**.", "answer_now", "", True),
        ("x</think>\nIntervention: search_for: Eiffel Tower\nmore text", "search_for", "Eiffel Tower", True),
        ('x</think>\nIntervention: `search-for`: "Gustave Eiffel"', "search_for", "Gustave Eiffel", True),
        ("x</think>\nIntervention: refocus on the question", "refocus", "", True),
        ("Intervention: refocus is wrong</think>\nIntervention: pass", None, "", True),
        ("x</think>\nIntervention: shout_loudly", None, "", False),
        ("x</think>\nI would rather not say.", None, "", False),
        ("", None, "", False),
        ("x</think>\nIntervention: answer_nowhere", None, "", False),
    ],
)
def test_parsing_crafted_outputs(text, name, argument, ok):
    got = parse_intervention(text, NAMES)
    assert (got.name, got.argument, got.ok) == (name, argument, ok)
    assert got == parse_intervention(text, NAMES)  # deterministic
    if not ok:
        assert got.failure


def test_crafted_server_outputs_become_options_or_counted_passes(options, observations):
    names = [o.name for o in options]
    with_arg = next(o for o in options if o.needs_argument)
    plain = next(o for o in options if not o.needs_argument)
    script = [
        f"The agent drifts.</think>\nIntervention: {plain.name}",  # one request: the line is there
        "I am not sure",  # reasoning without a line ...
        f"{with_arg.name}: Eiffel Tower",  # ... so the line is asked for
        "Hmm.</think>\nIntervention: dance_wildly",  # unknown name: a counted pass
    ]
    with FaultServer("script", script=script) as server:
        steerer = ServedSteerer(options, f"openai:scripted@{server.base_url}")
        obs = observations[-1]
        gen = torch.Generator().manual_seed(0)
        a, b, c = (steerer.sample_slow(obs, 1, gen)[0] for _ in range(3))
        assert server.posts == 4
    assert a.option == plain and a.payload["parsed"] and a.text == plain.render(obs)
    assert b.option == with_arg and b.argument == "Eiffel Tower" and "Eiffel Tower" in b.text
    assert c.option is None and c.text == "pass" and not c.payload["parsed"] and "dance_wildly" in c.payload["failure"]
    assert steerer.stats.parse_failures == 1 and steerer.stats.slow_samples == 3 and set(names) <= set(steerer.names)


# -- evaluation only, clear errors ------------------------------------------------------------------------------
def test_served_steerer_refuses_training_and_bad_specs(options, tiny_server):
    steerer = build_steerer("served", options, {"model": tiny_server.spec})
    assert isinstance(steerer, ServedSteerer) and steerer.eval() is steerer
    for attempt in (steerer.trainable_parameters, steerer.train, lambda: steerer.slow_logprobs("x", [])):
        with pytest.raises(EvaluationOnlyError, match="evaluation-only"):
            attempt()
    with pytest.raises(SteerEnvsError, match="openai:<model>@<base_url>"):
        ServedSteerer(options, "hf:gemma-3-270m")
    with pytest.raises(SteerEnvsError, match="must look like openai"):
        ServedSteerer(options, "openai:no-url")
    with pytest.raises(SteerEnvsError, match="top_logprobs"):
        ServedSteerer(options, tiny_server.spec, top_logprobs=0)
    assert backbone_for_model(tiny_server.spec) == "served"
    assert backbone_for_model("hf:gemma-3-270m") == backbone_for_model("/models/qwen") == "causal_lm"
    import pickle

    copy = pickle.loads(pickle.dumps(steerer))  # travels to pool workers: the HTTP client is rebuilt there
    assert copy._backend is None and copy.model_spec == steerer.model_spec


def test_steering_zero_shot_runs_a_served_steerer_and_logs_its_decisions(tiny_server, tmp_path):
    from benchmarks.harness.runner import run_episode
    from steer_envs.data import load_tasks
    from steer_envs.episodes import episode_seed

    context = MethodContext(benchmarks=("nq",), workdir=tmp_path / "ckpt")
    spec = f"steering_zero_shot:model={tiny_server.spec},tau=0.05,prompt_chars=2000,think_tokens=8"
    agent = build_policy(spec, context)
    assert agent.run_info == {"backbone": "served", "model": tiny_server.spec, "trained": False}
    assert agent.tau == 0.05 and agent.steerer.max_prompt_chars == 2000 and agent.steerer.max_think_tokens == 8
    env = context.make_env(split="dev")
    task = load_tasks("nq", "dev")[0].id
    first = run_episode(env, agent, episode_seed(task, 0), task, "served", 0)
    again = run_episode(env, agent, episode_seed(task, 0), task, "served", 0)
    env.close()
    assert first.decisions >= 1 and (first.f1, first.interventions, first.decisions) == (
        again.f1,
        again.interventions,
        again.decisions,
    )
    rows = [json.loads(line) for line in (tmp_path / "ckpt" / "decisions.jsonl").read_text().splitlines()]
    assert sum(r["path"] == "fast" for r in rows) == first.decisions + again.decisions
    assert agent.steerer.stats.slow_samples == sum(r["path"] == "slow" for r in rows)

    with pytest.raises(SteerEnvsError, match="served models only"):
        build_policy("steering_zero_shot:model=hf:/nowhere,think_tokens=8", MethodContext(benchmarks=("nq",)))


# -- the acceptance command, against the packaged Gemma ---------------------------------------------------------
@pytest.mark.slow
@pytest.mark.llm
def test_eval_cli_runs_steering_zero_shot_against_served_gemma(tmp_path):
    from benchmarks.harness.runfolder import label_filename
    from steer_envs.llm.registry import make_backend

    # a private bfloat16 copy, dropped when the test ends: the server shares this process with the test run and the
    # eval subprocess runs beside it, so a float32 copy kept for the module (1.1 GB) set the suite's memory peak
    gemma = make_backend("hf:gemma-3-270m", shared=False, dtype="bfloat16")
    out = tmp_path / "run"
    with OpenAICompatibleServer(gemma, model_name="gemma-3-270m") as server:
        spec = (
            f"steering_zero_shot:model=openai:gemma-3-270m@{server.base_url},tau=0.02,prompt_chars=1500,think_tokens=16"
        )
        proc = eval_in_subprocess(out, [spec], benchmark="nq", limit=2, max_turns=2, timeout=900)
        served = server.requests_served
    del gemma
    assert proc.returncode == 0, proc.stderr[-2000:]
    methods = json.loads((out / "methods.json").read_text())
    [(label, info)] = methods.items()
    assert label.startswith("steering_zero_shot:") and info["backbone"] == "served" and info["trained"] is False
    episodes = [
        json.loads(line) for line in (out / "episodes" / f"{label_filename(label)}.jsonl").read_text().splitlines()
    ]
    assert len(episodes) == 2 and all(e["decisions"] >= 1 and e["failure"] is None for e in episodes)
    decisions = sum(e["decisions"] for e in episodes)
    [log] = (out / "checkpoints").glob("*/decisions.jsonl")  # keyed by the training label (tau dropped)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    fast = [r for r in rows if r["path"] == "fast"]
    slow = [r for r in rows if r["path"] == "slow"]
    assert len(fast) == decisions and all(math.isfinite(r["z"]) for r in fast)
    assert len(slow) >= 1 and all("Intervention:" in r["output"] for r in slow)  # tau=0.02: the gate opens
    assert sum(e["interventions"] for e in episodes) <= len(slow)  # only a slow sample can intervene
    assert served >= decisions + len(slow)  # every decision went over HTTP to the served model
    assert [m["method"] for m in json.loads((out / "metrics.json").read_text())["methods"]] == [label]


# -- a server that dies mid-eval --------------------------------------------------------------------------------
def test_a_served_steerer_whose_server_dies_mid_eval_leaves_its_failures_recorded(tiny_backend, tmp_path):
    """The steerer's server stops after the first episode: that episode keeps its outcome, every later one ends as
    a recorded failure naming the steerer's server (not an F1 of 0, not a crash), and the run folder resumes with
    nothing left to run."""
    import threading

    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate, write_summary

    server = OpenAICompatibleServer(tiny_backend, model_name="tiny").__enter__()
    fail_fast = "timeout=2&max_retries=1&backoff=0.01&max_backoff=0.02"
    spec = f"steering_zero_shot:model={server.spec}?{fail_fast},tau=0.05,prompt_chars=2000,think_tokens=8"
    config = EvalConfig(executor="sim:default", benchmarks=("nq",), split="dev", limit=4, seeds=1, max_turns=2)
    folder = RunFolder(tmp_path / "run", config)
    first_done = threading.Event()
    log_lines: list[str] = []
    episodes = folder.root / "episodes"

    def stop_after_the_first_episode():
        while not (episodes.is_dir() and any(p.read_text().strip() for p in episodes.glob("*.jsonl"))):
            if first_done.wait(0.01):
                return
        server.stop()

    watcher = threading.Thread(target=stop_after_the_first_episode, daemon=True)
    watcher.start()
    try:
        outcome = evaluate(folder, spec, progress=False, log=log_lines.append)
    finally:
        first_done.set()
        server.stop()
    records = outcome.records
    assert len(records) == 4 and not records[0].failed and records[0].decisions >= 1
    failed = [r for r in records if r.failed]
    assert failed and all(
        r.failure.startswith(f"policy: {server.spec}: POST {server.base_url}/completions failed after 2 attempt")
        for r in failed
    )
    (summary,), _ = write_summary(folder, resamples=50)
    assert summary.failed == len(failed) and summary.n_tasks == 4 - len(failed)
    again = evaluate(folder, spec, progress=False, log=log_lines.append)
    assert again.ran == 0 and len(again.records) == 4  # resumed: every episode kept, nothing redone


# -- what the F1 does not show ------------------------------------------------------------------------------------
def test_unparseable_slow_outputs_are_said_under_the_table_and_counted_in_the_run_folder(tmp_path):
    """A served model that never writes the grammar: every slow-path sample is read as a pass. ``steer-envs eval``
    says so under its table (console and ``table.md``), ``metrics.json`` counts them, and each episode record keeps
    its own counts (so a resumed run adds up the same)."""
    from benchmarks.harness.runfolder import label_filename
    from tests.llm.support import ScriptedBackend

    backend = ScriptedBackend(["I would rather not say."])  # reasoning without a line, and a line with no name
    out = tmp_path / "run"
    with OpenAICompatibleServer(backend, model_name="scripted") as server:
        spec = f"steering_zero_shot:model=openai:scripted@{server.base_url},tau=0.05,think_tokens=8"
        proc = eval_in_subprocess(out, [spec], benchmark="nq", limit=2, max_turns=2, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [method] = json.loads((out / "metrics.json").read_text())["methods"]
    counters = method["counters"]
    assert counters["slow_samples"] >= 1 and counters["parse_failures"] == counters["slow_samples"]
    said = f"{counters['parse_failures']} of {counters['slow_samples']} slow-path outputs held no valid intervention"
    assert said in proc.stdout and said in (out / "table.md").read_text()
    lines = (out / "episodes" / f"{label_filename(method['method'])}.jsonl").read_text().splitlines()
    per_episode = [json.loads(line)["counters"] for line in lines]
    assert sum(c.get("parse_failures", 0) for c in per_episode) == counters["parse_failures"]
    assert sum(c.get("fast_scores", 0) for c in per_episode) == counters["fast_scores"] >= 2
