"""The q(s) diagnostics: hand-computed pieces, and a small real run on sim:default (real tasks, BM25, forks)."""

import numpy as np
import pytest

from agents.steering.diagnose import MeasuredState, between_task_share, diagnose, q_values, state_type


def test_state_types_follow_the_hidden_state():
    assert state_type({"drift": "never_answer"}, 0) == "start"  # turn 0 looks the same whatever is hidden
    assert state_type({"drift": "never_answer"}, 4) == "ramble"
    assert state_type({"evidence_in_hand": True}, 2) == "evidence"
    assert state_type({"fixated": True}, 2) == "fixated"
    assert state_type({}, 1) == "unresolved_t1" and state_type({}, 7) == "unresolved_t3"


def test_q_values_and_between_task_share_hand_computed():
    states = [MeasuredState("a", 0, "start", [0.5], [[1.0, 0.0]]), MeasuredState("a", 1, "start", [0.0], [[0.0, 0.0]])]
    assert q_values(states, "all").tolist() == [0.5, 0.0]  # mean(|1-.5|, |0-.5|) = .5
    assert q_values(states, "one", option=0).tolist() == [0.5, 0.0]
    assert between_task_share(["a", "a", "b", "b"], np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(1.0)
    assert between_task_share(["a", "b", "a", "b"], np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(0.0)


@pytest.mark.slow
def test_small_diagnosis_is_deterministic_and_consistent(monkeypatch):
    from scipy import stats

    from agents.steering import diagnose as module
    from steer_envs.envs.catalogue import STEERING

    banks = []
    real_measure_bank = module.measure_bank

    def measure_and_keep(*args, **kwargs):  # the real measurement, its states kept (train, then test, per run)
        banks.append(real_measure_bank(*args, **kwargs))
        return banks[-1]

    monkeypatch.setattr(module, "measure_bank", measure_and_keep)
    a = diagnose(train_tasks=4, rollouts=2, test_tasks=7, N=2, progress=False)
    b = diagnose(train_tasks=4, rollouts=2, test_tasks=7, N=2, progress=False)
    train, test = banks[0], banks[1]
    search = [t.name for t in STEERING[1:]].index("search_question")
    for label, option in (("q_all", None), ("q_search", search)):
        assert a[label] == b[label]  # same seed, same measurements
        r = a[label]

        def q(seed_set: int, option: int | None = option) -> np.ndarray:  # q(s) from the measured returns/baselines
            return np.array(
                [
                    np.mean(np.abs(np.asarray(s.returns[seed_set], dtype=float) - s.baselines[seed_set]))
                    if option is None
                    else abs(s.returns[seed_set][option] - s.baselines[seed_set])
                    for s in test
                ]
            )

        assert r["mean_test"] == pytest.approx(float(q(0).mean()))
        expected = float(stats.spearmanr(q(0), q(1))[0])  # test-retest: two independent seed sets
        assert r["reliability_spearman"] == pytest.approx(expected, nan_ok=True)
        assert r["between_task_share_test"] == pytest.approx(
            between_task_share([s.task_id for s in test], q(0)), nan_ok=True
        )
        assert sum(t["test_states"] for t in r["types"].values()) == a["test_states"] == len(test)
        assert sum(t["train_states"] for t in r["types"].values()) == a["train_states"] == len(train)
    assert a["test_tasks"] == 14 and "| q_all |" in a["markdown"]


@pytest.mark.slow  # real continuations of every catalogue option (~40 s on a loaded 2-core machine)
def test_measure_bank_skips_states_whose_measurement_failed(monkeypatch):
    """A measurement whose continuations all failed has a ``None`` baseline or return, not a q: the state is left
    out (and counted) instead of entering the q arrays; the other states are kept as measured (real env, real
    measurements, a failure injected into one of them)."""
    import dataclasses

    from agents.steering import diagnose as module
    from agents.steering.evaluate import select_tasks
    from agents.steering.rollouts import make_steering_env

    real_measure = module.measure_state
    calls = []

    def measure_with_failures(*args, **kwargs):  # the 2nd call (first state, 2nd seed set): one option failed
        m = real_measure(*args, **kwargs)
        calls.append(m)
        return dataclasses.replace(m, returns=[None, *m.returns[1:]]) if len(calls) == 2 else m

    monkeypatch.setattr(module, "measure_state", measure_with_failures)
    ids = select_tasks("dev", benchmarks=["nq"], max_per_benchmark=1, seed=3)
    env = make_steering_env("sim:default", "dev", action_mode="discrete", benchmarks=["nq"])
    try:
        dropped: list[str] = []
        states = module.measure_bank(env, ids, seed=5, N=1, seed_sets=2, dropped=dropped)
    finally:
        env.close()
    assert dropped == ids and len(states) >= 1 and len(calls) == 2 * (len(states) + 1)
    for s in states:
        assert all(b is not None for b in s.baselines) and all(r is not None for rs in s.returns for r in rs)
    assert np.isfinite(q_values(states, "all", 1)).all()
