"""Failures are not rewards: a model or retrieval server that fails after its retries ends the
episode as *truncated* with ``info["failure"]`` in every env; the steering trainer's continuations retry or drop a
failed rollout instead of averaging its 0 into q(s) and the GRPO advantages; the ACTGUIDE trainer drops failed
trajectories from their groups; the harness counts failed episodes and leaves them out of its means.

Real parts throughout: the OpenAI-compatible server serving the tiny model over loopback HTTP, and a Search-R1
``/retrieve`` server backed by the real BM25 index, killed (or failing on some queries) while the run goes on."""

from __future__ import annotations

import json
import socket
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import numpy as np
import pytest

import steer_envs  # noqa: F401
from agents.steering.objectives import grpo_advantages, intervention_effect
from agents.steering.rollouts import collect_state_bank, continuation_outcome, continuation_seeds, measure_state
from baselines.simple import NoSupervision
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate, run_episode, write_summary
from steer_envs.episodes import EpisodeLog
from steer_envs.errors import SteerEnvsError
from steer_envs.failures import episode_failed
from tests.llm.support import FaultServer
from tests.servers.openai_server import OpenAICompatibleServer

FAIL_FAST = "timeout=2&max_retries=1&backoff=0.01&max_backoff=0.02"


class RetrievalServer:
    """A Search-R1 ``/retrieve`` server in a thread over the real BM25 index. ``fails(query)`` makes it answer
    HTTP 500 for some queries (a broken index shard: the same query fails every time); :meth:`kill` stops it
    listening, as a killed server does."""

    def __init__(self, bm25, fails=lambda query: False):
        self.requests = self.failures = 0
        self._connections: set = set()
        self._closed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def setup(self):
                super().setup()
                outer._connections.add(self.connection)

            def do_POST(self):  # noqa: N802
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if outer._closed.is_set():  # a kept-alive connection of a killed server: no reply
                    self.close_connection = True
                    return
                outer.requests += 1
                if any(fails(q) for q in payload["queries"]):
                    outer.failures += 1
                    self._send(500, b'{"error": "index shard unavailable"}')
                    return
                hits = bm25.batch_search(payload["queries"], payload["topk"])
                self._send(
                    200,
                    json.dumps(
                        {
                            "result": [
                                [
                                    {"document": {"id": h.id, "contents": f'"{h.title}"\n{h.text}'}, "score": h.score}
                                    for h in row
                                ]
                                for row in hits
                            ]
                        }
                    ).encode(),
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def spec(self) -> str:
        return f"http:{self.url}?timeout=2&retries=1&backoff=0.01"

    def kill(self) -> None:
        """Stop listening and drop every open connection (kept-alive ones included), as a killed process does."""
        if not self._closed.is_set():
            self._closed.set()
            self.httpd.shutdown()
            self.httpd.server_close()
            for conn in list(self._connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


@pytest.fixture(scope="module")
def bm25(shared_data_dir):
    from steer_envs.retrieval import make_retriever

    return make_retriever("bm25s")


def _play(env, action, first_action=None):
    """Step ``action`` (``first_action`` first) to the end; return the last step's outputs."""
    terminated = truncated = False
    out = None
    step = 0
    while not (terminated or truncated):
        out = env.step(first_action if step == 0 and first_action is not None else action)
        _, _, terminated, truncated, _ = out
        step += 1
    return out


def _assert_truncated_by(out, source: str, where: str):
    _, reward, terminated, truncated, info = out
    assert truncated and not terminated, "a service failure is not an outcome: the episode is truncated"
    assert reward == 0.0 and info["failure_source"] == source and where in info["failure"]
    assert episode_failed(info) and "f1" in info  # the final info is complete; the harness reads the flag


# -- (a) a server killed mid-run: every env truncates -----------------------------------------------------------
def test_model_server_killed_mid_run_ends_episodes_truncated_with_the_failure(tiny_backend, shared_data_dir):
    server = OpenAICompatibleServer(tiny_backend, "tiny").start()
    try:
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            executor=f"{server.spec}?{FAIL_FAST}&max_new_tokens=8",
            benchmarks=["nq"],
            split="dev",
            max_turns=3,
        )
        task_ids = [t.id for t in env.unwrapped.tasks[:3]]
        env.reset(seed=0, options={"task_id": task_ids[0]})
        _, _, terminated, truncated, info = _play(env, 0)
        assert terminated and not truncated and "failure" not in info  # healthy: the episode ends normally
        env.reset(seed=1, options={"task_id": task_ids[1]})
        _, _, terminated, truncated, _ = env.step(0)
        assert not (terminated or truncated) and server.requests_served >= 4
    finally:
        server.stop()  # killed in the middle of episode 2
    out = _play(env, 0)
    _assert_truncated_by(out, "backend", server.base_url)
    assert out[4]["executor_turns"] == 2  # one healthy turn of episode 2, then the failed one
    with pytest.raises(SteerEnvsError, match="episode has ended"):
        env.step(0)
    record = run_episode(env, NoSupervision(), 7, task_ids[2], "none", 0)  # the harness's record of the next one
    assert record.failed and record.decisions == 1 and server.base_url in record.failure
    env.close()


@pytest.mark.parametrize(
    "env_id",
    [
        "steer_envs/SearchSteering-v0",
        "steer_envs/SearchPlanning-v0",
        "steer_envs/SearchVerification-v0",
        "steer_envs/HandoffSteering-v0",
    ],
)
def test_retrieval_server_killed_mid_run_truncates_every_search_env(env_id, bm25):
    server = RetrievalServer(bm25)
    try:
        env = gym.make(
            env_id,
            split="dev",
            benchmarks=["hotpotqa"],
            max_turns=4 if "Handoff" not in env_id else 12,
            retriever=server.spec,
        )
        tasks = [t.id for t in env.unwrapped.tasks[:2]]
        env.reset(seed=0, options={"task_id": tasks[0]})
        _, _, terminated, truncated, info = _play(env, 0)
        assert terminated and not truncated and "failure_source" not in info and server.requests > 0
        server.kill()
        env.reset(seed=1, options={"task_id": tasks[1]})  # the verification env already runs (and fails) here
        out = _play(env, 0)
    finally:
        server.kill()
    _assert_truncated_by(out, "retrieval", server.url)


def test_retrieval_server_killed_truncates_guided_search_and_its_prefix(bm25):
    server = RetrievalServer(bm25)
    try:
        env = gym.make(
            "steer_envs/GuidedSearch-v0",
            split="dev",
            benchmarks=["hotpotqa"],
            action_mode="text",
            retriever=server.spec,
        ).unwrapped
        task = env.tasks[0].id
        env.reset(seed=0, options={"task_id": task})
        _, _, terminated, truncated, _ = env.step("<search> first query about the question </search>")
        assert not (terminated or truncated) and server.requests == 1
        server.kill()
        out = env.step("<search> a query the dead server never answers </search>")
        _assert_truncated_by(out, "retrieval", server.url)
        assert env.fork().state.failure is not None  # forks and snapshots carry the failure
        # a reference prefix that fails during reset: the first step reports the truncation
        env.reset(seed=1, options={"task_id": env.tasks[1].id, "plan_k": 2, "plan_mode": "prefix"})
        assert env.state.done and env.state.failure is not None
        _assert_truncated_by(env.step("<answer> x </answer>"), "retrieval", server.url)
    finally:
        server.kill()


# -- (b) q(s) labels and advantages exclude failed continuations ------------------------------------------------
ACTIONS = [
    "Verify the evidence: re-read the retrieved documents.",
    "Answer now with what you found.",
    "Search for the second entity of the question.",
]


def _broken_shard(query: str) -> bool:
    return zlib.crc32(query.encode()) % 3 == 0  # about a third of all queries: the same ones every time


def _mean(values):
    return float(np.mean(values)) if values else None


def test_q_labels_and_advantages_exclude_failed_continuations(bm25):
    server = RetrievalServer(bm25, _broken_shard)
    try:
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            split="dev",
            benchmarks=["hotpotqa"],
            max_turns=4,
            action_mode="text",
            retriever=server.spec.replace("retries=1", "retries=0"),
        )
        bank = collect_state_bank(env, [t.id for t in env.unwrapped.tasks[:6]], 5, "text")
        seeds = continuation_seeds([0, 1], 4)
        found = None
        for state in bank:  # the first state where a failure changes the label (the outcomes are deterministic)
            outcomes = {a: [continuation_outcome(env, state, a, s, "text") for s in seeds] for a in ["pass", *ACTIONS]}
            # today's label: a failed continuation's 0 averaged in as if it were a return
            old = {a: _mean([o.total for o in v]) for a, v in outcomes.items()}
            # the true label: the continuations that finished, only
            true = {a: _mean([o.total for o in v if not o.failed]) for a, v in outcomes.items()}
            usable = [a for a in ACTIONS if true[a] is not None]
            if true["pass"] is None or not usable:
                continue
            q_old = intervention_effect([old[a] for a in ACTIONS], old["pass"])
            q_true = intervention_effect([true[a] for a in usable], true["pass"])
            if q_old != q_true:
                found = state, outcomes, old, true, usable, q_old, q_true
                break
        assert found is not None, "no bank state where a failed continuation biases q(s)"
        state, outcomes, old, true, usable, q_old, q_true = found
        n_failed = sum(o.failed for v in outcomes.values() for o in v)
        assert n_failed > 0 and abs(q_old - q_true) > 1e-9  # the bias: failures read as 0 returns move the label
        adv_old = grpo_advantages([old[a] for a in ACTIONS], old["pass"])

        # the trainer's measurement (without retries, so it must equal the label over finished continuations)
        m = measure_state(env, state, ACTIONS, seeds, "text", retries=0)
        assert m.failed_continuations == m.dropped_continuations == n_failed
        assert m.baseline == pytest.approx(true["pass"]) and m.usable
        assert [m.returns[j] for j in m.valid] == pytest.approx([true[a] for a in usable])
        q_new = intervention_effect([m.returns[j] for j in m.valid], m.baseline)
        adv_new = grpo_advantages([m.returns[j] for j in m.valid], m.baseline)
        assert q_new == pytest.approx(q_true) and q_new != pytest.approx(q_old)
        assert adv_new.tolist() == pytest.approx(grpo_advantages([true[a] for a in usable], true["pass"]).tolist())
        assert len(adv_new) != len(adv_old) or not np.allclose(adv_new, adv_old)

        # with retries, a failed continuation is rerun with a fresh seed; what finishes counts, the rest is dropped
        r = measure_state(env, state, ACTIONS, seeds, "text")
        continuations = len(seeds) * (1 + len(ACTIONS))
        assert r.failed_continuations >= n_failed and r.dropped_continuations <= n_failed
        assert r.rollouts == continuations - r.dropped_continuations + r.failed_continuations
        assert all(v is None or 0.0 <= v <= 1.0 for v in [r.baseline, *r.returns])
    finally:
        server.kill()


def test_steering_trainer_logs_failed_continuations_and_skipped_states(bm25, tmp_path):
    from agents.steering.config import SteeringConfig
    from agents.steering.trainer import SteeringTrainer

    server = RetrievalServer(bm25, _broken_shard)
    try:
        config = SteeringConfig(
            m=1, k=6, G=2, N=2, bank_tasks=6, benchmarks=["hotpotqa"], split="dev", max_turns=4, eps_sel=0.5
        )
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            split="dev",
            benchmarks=["hotpotqa"],
            max_turns=4,
            action_mode=config.action_mode,
            metric=config.metric,
            retriever=server.spec,
        )
        log = SteeringTrainer(config, tmp_path / "run", env=env).run().log
    finally:
        server.kill()
    record = log[0]
    assert record["failed_continuations"] > 0 and record["dropped_continuations"] <= record["failed_continuations"]
    assert 0 <= record["skipped_states"] <= record["states"] and np.isfinite(record["mean_q"])


# -- ACTGUIDE-RL: a failed trajectory leaves its group --------------------------------------------------------------
def test_actguide_trainer_drops_failed_trajectories_and_counts_them(bm25, tmp_path, monkeypatch):
    import agents.actguide.trainer as trainer_module
    from agents.actguide.tasks import make_env
    from tests.agents.support import small_actguide

    server = RetrievalServer(bm25, _broken_shard)
    monkeypatch.setattr(
        trainer_module,
        "make_env",  # the run's own env, its retriever behind the flaky server
        lambda c, split=None, **kw: make_env(c, split, retriever=server.spec, **kw),
    )
    try:
        config = small_actguide(budget=24, update_epochs=1)
        log = trainer_module.ActGuideTrainer(config, tmp_path / "run").run().log
    finally:
        server.kill()
    assert sum(r["failed_trajectories"] for r in log) > 0
    assert all(r["dropped_groups"] <= r["failed_trajectories"] for r in log)


def test_drop_failed_keeps_groups_without_failures_and_drops_small_ones():
    from agents.actguide.rollout import Trajectory
    from agents.actguide.trainer import drop_failed

    def traj(reward, failure=None):
        return Trajectory("t", "nq", 0, "prompt", reward=reward, failure=failure)

    clean = [traj(1.0), traj(0.0)]
    partial = [traj(1.0), traj(0.0), traj(0.0, "retrieval: down"), traj(1.0)]
    lost = [traj(1.0), traj(0.0, "backend: down"), traj(0.0, "backend: down")]
    kept, dropped = drop_failed([clean, partial, lost, [traj(0.0)]])
    assert dropped == 1 and kept[0] is clean and [t.reward for t in kept[1]] == [1.0, 0.0, 1.0]
    assert kept[2][0].reward == 0.0 and len(kept) == 3  # a one-member group without failures is left as it was


# -- (c) the harness: failed episodes are counted and left out of the means ---------------------------------------
def test_harness_table_counts_failed_episodes_and_the_means_exclude_them(tmp_path, shared_data_dir):
    config = EvalConfig(executor="sim:default", benchmarks=("nq",), split="dev", limit=4, seeds=1, max_turns=3)
    golden = config.tasks()[0].golden_answers[0]
    with FaultServer(
        "script", script=[f"<think> I know it. </think>\n<answer> {golden} </answer>"], die_after=2
    ) as server:
        cfg = EvalConfig(
            executor=f"openai:m@{server.base_url}?{FAIL_FAST}",
            benchmarks=("nq",),
            split="dev",
            limit=4,
            seeds=1,
            max_turns=3,
        )
        assert [t.id for t in cfg.tasks()] == [t.id for t in config.tasks()]
        folder = RunFolder(tmp_path / "run", cfg)
        evaluate(folder, "no_supervision", progress=False, log=lambda _: None)
    records = EpisodeLog(folder.episodes_path("no_supervision")).records
    failed = [r for r in records if r.failed]
    finished = [r for r in records if not r.failed]
    assert len(records) == 4 and len(failed) == 2 and finished[0].f1 == 1.0
    summaries, table = write_summary(folder, resamples=50)
    (summary,) = summaries
    assert summary.failed == 2 and summary.n_tasks == 2
    assert summary.avg_f1 == pytest.approx(100 * np.mean([r.f1 for r in finished]))
    assert summary.avg_f1 != pytest.approx(100 * np.mean([r.f1 for r in records]))  # what averaging the 0s gives
    header, row = [line for line in table.splitlines() if line.startswith("| ")][:2]
    assert header.split("|")[-2].strip() == "Failed" and row.split("|")[-2].strip() == "2"
    assert "Failed episodes" in table and "left out" in table
    metrics = json.loads((folder.root / "metrics.json").read_text())["methods"][0]
    assert metrics["failed"] == 2 and metrics["dropped_pairs"] == 2


def test_policy_continuations_keep_failures_out_of_the_labels(bm25):
    """continuation="policy" (the steerer takes the later decisions): a continuation a service failure cut short is
    still dropped, never averaged in as a return."""
    from agents.steering.encoder import EncoderSteerer
    from agents.steering.interventions import options_from_catalogue
    from agents.steering.rollouts import ContinuationPolicy

    server = RetrievalServer(bm25, _broken_shard)
    try:
        env = gym.make(
            "steer_envs/SearchSteering-v0",
            split="dev",
            benchmarks=["hotpotqa"],
            max_turns=4,
            action_mode="text",
            retriever=server.spec.replace("retries=1", "retries=0"),
        )
        steerer = EncoderSteerer(options_from_catalogue(env.unwrapped.catalogue), hash_dim=1 << 10).eval()
        policy = ContinuationPolicy(steerer, tau=0.5, action_mode="text")
        bank = collect_state_bank(env, [t.id for t in env.unwrapped.tasks[:6]], 5, "text")
        seeds = continuation_seeds([0, 1], 4)
        for state in bank:
            outcomes = [continuation_outcome(env, state, "pass", s, "text", policy) for s in seeds]
            finished = [o.total for o in outcomes if not o.failed]
            if finished and len(finished) < len(outcomes):
                break
        else:
            pytest.fail("no bank state with both failed and finished policy continuations")
        m = measure_state(env, state, [], seeds, "text", retries=0, policy=policy)
        assert m.failed_continuations == m.dropped_continuations == len(outcomes) - len(finished)
        assert m.baseline == pytest.approx(float(np.mean(finished)))
    finally:
        server.kill()
