"""The note reader's probe: applied with NumPy it gives scikit-learn's probabilities, it is fitted once and read
from the disk cache afterwards, and a fresh process whose cache holds it reads a note without importing
scikit-learn (the import is a third of a cold first step's CPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from steer_envs.notes import probe as probe_module
from steer_envs.notes.probe import LinearProbe, fitted_probe


@pytest.mark.parametrize("classes", [2, 5])
def test_the_numpy_probe_gives_scikit_learns_probabilities(classes):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(12 * classes, 16)).astype(np.float32)
    labels = [f"intent{i % classes}" for i in range(len(vectors))]
    model = LogisticRegression(C=30.0, max_iter=5000).fit(vectors, labels)
    probe = LinearProbe.from_sklearn(model)
    queries = rng.normal(size=(7, 16)).astype(np.float32)
    assert probe.classes == tuple(model.classes_)
    np.testing.assert_allclose(probe.predict_proba(queries), model.predict_proba(queries), rtol=1e-6, atol=1e-9)


def test_the_fit_is_kept_on_disk_and_read_back(monkeypatch, tmp_path):
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path))
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(30, 8)).astype(np.float32)
    labels = [f"intent{i % 3}" for i in range(30)]
    first = fitted_probe(vectors, labels, 30.0)
    stored = list((tmp_path / "notes").glob("probe-*.npz"))
    assert len(stored) == 1

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted again although the cache holds the fit")

    monkeypatch.setattr(LogisticRegression, "fit", no_fit)
    again = fitted_probe(vectors, labels, 30.0)
    assert again.classes == first.classes and np.array_equal(again.coef, first.coef)
    stored[0].write_bytes(b"torn")  # a file that does not load is fitted again and replaced
    monkeypatch.undo()
    monkeypatch.setenv("STEER_ENVS_CACHE", str(tmp_path))
    assert np.array_equal(fitted_probe(vectors, labels, 30.0).coef, first.coef)
    assert probe_module._key(vectors, labels, 30.0) != probe_module._key(vectors, labels, 10.0)


def test_a_fresh_process_with_a_warm_cache_reads_a_note_without_scikit_learn(tmp_path):
    script = (
        "import sys\n"
        "from steer_envs.notes.reader import read_note\n"
        "reading = read_note('Verify the answer against the passages before answering.')\n"
        "print(reading.intent, 'sklearn' in sys.modules)\n"
    )
    env = {**os.environ, "STEER_ENVS_CACHE": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr[-2000:]
    (first_intent, first_imported), (second_intent, second_imported) = (run.stdout.split() for run in runs)
    assert first_intent == second_intent != "none"
    assert (first_imported, second_imported) == ("True", "False")
