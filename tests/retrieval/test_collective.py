"""``batched:<spec>``: concurrent searches of stepping envs reach the retriever as one batch, with the same hits."""

from __future__ import annotations

import gymnasium as gym

import steer_envs  # noqa: F401
from steer_envs.retrieval import cache as retrieval_cache
from steer_envs.retrieval import make_retriever
from steer_envs.retrieval.collective import CollectiveBatcher, run_together, step_together

QUERIES = ["capital of romania", "danube delta", "first nobel prize physics", "who wrote hamlet"]


def test_the_searches_of_all_parties_go_out_as_one_call(shared_data_dir):
    inner = make_retriever("bm25s", data_dir=shared_data_dir)
    batcher = CollectiveBatcher(inner)
    got = run_together(batcher, [lambda q=q: batcher.search(q, 3) for q in QUERIES])
    assert batcher.calls == 1 and batcher.queries == 4  # every party was waiting: one batch
    assert [[h.id for h in hits] for hits in got] == [[h.id for h in inner.search(q, 3)] for q in QUERIES]
    assert [h.id for h in batcher.search(QUERIES[0], 3)] == [h.id for h in inner.search(QUERIES[0], 3)]
    assert batcher.calls == 1  # outside a party: straight through


def test_envs_stepped_together_match_envs_stepped_one_by_one(shared_data_dir):
    retrieval_cache.set_enabled(False)  # every search reaches the retriever
    try:
        runs = []
        for spec, together in (("bm25s", False), ("batched:bm25s", True)):
            envs = [
                gym.make("steer_envs/SearchSteering-v0", split="dev", retriever=spec, data_dir=str(shared_data_dir))
                for _ in range(4)
            ]
            batcher = make_retriever(spec, data_dir=str(shared_data_dir))
            for i, env in enumerate(envs):
                env.reset(seed=i)
            rewards = []
            for _ in range(12):
                steps = step_together(envs, [0] * 4, batcher) if together else [e.step(0) for e in envs]
                rewards.append([(r[1], r[2], r[4]["executor_turns"]) for r in steps])
                for env, r in zip(envs, steps):
                    if r[2] or r[3]:
                        env.reset()
            runs.append(rewards)
        assert runs[0] == runs[1]
        assert batcher.queries >= batcher.calls > 0
    finally:
        retrieval_cache.set_enabled(True)
