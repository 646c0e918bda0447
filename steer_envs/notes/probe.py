"""The note reader's linear probe: fitted by scikit-learn once, applied with NumPy, kept on disk between processes.

Why: importing scikit-learn costs seconds of CPU in every fresh process that reads a note (``BENCHMARKS.md``,
*Cold start*), and the probe's fit is the same in every process (the same prototypes' vectors, the same labels, the
same solver). So the fitted weights are stored under ``$STEER_ENVS_CACHE/notes`` (keyed by the vectors, the labels,
the regularisation and scikit-learn's version) and a process that finds them never imports scikit-learn; applying
the probe is one matrix product and a softmax, which is what ``LogisticRegression.predict_proba`` computes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import metadata

import numpy as np


@dataclass(frozen=True)
class LinearProbe:
    """A fitted multinomial logistic regression: ``classes`` (names), ``coef`` (classes x dim, or 1 x dim for two
    classes), ``intercept``."""

    classes: tuple[str, ...]
    coef: np.ndarray
    intercept: np.ndarray

    def predict_proba(self, vectors: np.ndarray) -> np.ndarray:
        """Each row's probability of each class, as ``LogisticRegression.predict_proba`` gives it."""
        scores = vectors @ self.coef.T + self.intercept
        if len(self.classes) == 2:  # scikit-learn keeps one weight vector for two classes: a logistic
            positive = 1.0 / (1.0 + np.exp(-scores[:, 0]))
            return np.stack([1.0 - positive, positive], axis=1)
        scores = np.exp(scores - scores.max(axis=1, keepdims=True))
        return scores / scores.sum(axis=1, keepdims=True)

    @classmethod
    def from_sklearn(cls, model) -> LinearProbe:
        return cls(tuple(str(c) for c in model.classes_), np.asarray(model.coef_), np.asarray(model.intercept_))


def fitted_probe(vectors: np.ndarray, labels: list[str], c: float) -> LinearProbe:
    """The probe fitted on ``vectors`` (one row per label), from the disk cache when an earlier process fitted it."""
    from ..atomic import atomic_write_bytes
    from ..paths import cache_dir

    path = cache_dir("notes") / f"probe-{_key(vectors, labels, c)}.npz"
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as stored:
                probe = LinearProbe(tuple(str(x) for x in stored["classes"]), stored["coef"], stored["intercept"])
            if probe.coef.shape[1] == vectors.shape[1]:
                return probe
        except (OSError, ValueError, EOFError, KeyError):
            pass  # torn or foreign: fit again and replace it
    from sklearn.linear_model import LogisticRegression

    probe = LinearProbe.from_sklearn(LogisticRegression(C=c, max_iter=5000).fit(vectors, labels))
    atomic_write_bytes(
        path,
        lambda fh: np.savez(fh, classes=np.array(probe.classes), coef=probe.coef, intercept=probe.intercept),
    )
    return probe


def _key(vectors: np.ndarray, labels: list[str], c: float) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(vectors).tobytes())
    digest.update(json.dumps([labels, c, metadata.version("scikit-learn")]).encode())
    return digest.hexdigest()[:16]


__all__ = ["LinearProbe", "fitted_probe"]
