"""The answerability reader: P(this retrieved passage holds a gold answer | question, passage).

Training data are the reading pairs of :mod:`.states` on the *train* split (labels from the train split's gold
answers, :mod:`.labels`); the classifier is chosen among a few small, regularised candidates by ROC AUC on the
*dev* split's pairs; test is only ever read by :func:`evaluate_reader`. Features are those of :mod:`.features`
(lexical coverage, answer-type cues, the encoder's cosine and optionally the q*p product), standardised.

Caching (``$STEER_ENVS_CACHE/reader/``): encoder vectors by text (:mod:`.embeddings`), reading pairs per split
and the trained reader, each keyed by a fingerprint of everything that shapes it (the config, the encoder, the
task files and the corpus file, :data:`FEATURE_VERSION`, :data:`PAIRS_VERSION`), so the second call loads in about
a second. Training is deterministic: the same config gives the same pairs, the same features and the same classifier.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..atomic import atomic_write_bytes
from ..errors import SteerEnvsError, unknown_name
from ..paths import cache_dir, file_fingerprint, resolve_data_dir
from .embeddings import EmbeddingStore
from .encoders import check_encoder_spec, make_encoder
from .features import LEXICAL_NAMES, QuestionView, lexical_features, pair_features
from .states import Document, ReadingPair, collect_pairs, observation_documents

#: bump when the features change meaning (invalidates cached readers; the cached pairs stay valid). 2: the sentence
#: splitter, words, stop list and entities of :mod:`steer_envs.text` (a sentence ends only before a capital, a digit,
#: a quote or a parenthesis, so "vs. the" or "e.g. a" does not end one)
FEATURE_VERSION = 2
#: bump when the labels or the pair collection change meaning (invalidates cached pairs and readers)
PAIRS_VERSION = 1


def _logreg(c: float):
    def build(seed: int):
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=c, max_iter=2000)

    return build


def _gbdt(leaves: int, min_leaf: int):
    def build(seed: int):
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(
            max_iter=200,
            learning_rate=0.05,
            max_leaf_nodes=leaves,
            min_samples_leaf=min_leaf,
            l2_regularization=1.0,
            early_stopping=False,
            random_state=seed,
        )

    return build


def _mlp(hidden: int, alpha: float):
    def build(seed: int):
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(
            hidden_layer_sizes=(hidden,),
            alpha=alpha,
            max_iter=300,
            early_stopping=True,
            validation_fraction=0.1,
            random_state=seed,
        )

    return build


#: the candidate classifiers, by name (a config names which to try; dev AUC picks one)
CLASSIFIERS: dict[str, Any] = {
    "logreg-c0.01": _logreg(0.01),
    "logreg-c0.1": _logreg(0.1),
    "logreg-c1": _logreg(1.0),
    "gbdt-7": _gbdt(7, 80),
    "gbdt-15": _gbdt(15, 40),  # small boosted trees: the cues interact (a year matters
    "mlp-32": _mlp(32, 1e-2),
    "mlp-64": _mlp(64, 1e-1),  # for 'when' questions only), a linear model cannot say so
}


@dataclass(frozen=True)
class ReaderConfig:
    """What a reader is trained from (every field enters its cache key)."""

    encoder: str = "lexical"  # a :func:`~.encoders.make_encoder` spec ('lexical', 'minilm', 'minilm:128', 'hash:64')
    interactions: bool = True  # add the q*p product of the encoder's vectors (a learned bilinear match)
    classifiers: tuple[str, ...] = ("logreg-c0.1", "gbdt-7", "gbdt-15")
    executor: str = "sim:default"  # whose retrievals the pairs come from
    topk: int = 3  # documents per search, as the envs' default
    train_tasks: int | None = 2000  # a seeded subsample of the train split (encoding is the cost), None = all
    dev_tasks: int | None = None
    intervene_prob: float = 0.3  # how often the collecting policy intervenes (states after interventions too)
    seed: int = 0
    data_dir: str | None = None
    benchmarks: tuple[str, ...] | None = None  # None: all seven

    def __post_init__(self) -> None:
        unknown = [c for c in self.classifiers if c not in CLASSIFIERS]
        if unknown or not self.classifiers:
            raise unknown_name("reader classifier", (unknown or [""])[0], list(CLASSIFIERS))
        check_encoder_spec(self.encoder)  # an unknown encoder fails here, listing the valid ones

    def pairs_fields(self, split: str, max_tasks: int | None) -> dict[str, Any]:
        return {
            "split": split,
            "max_tasks": max_tasks,
            "executor": self.executor,
            "topk": self.topk,
            "intervene_prob": self.intervene_prob,
            "seed": self.seed,
            **({"benchmarks": list(self.benchmarks)} if self.benchmarks else {}),
        }


def _data_fingerprint(data_dir: str | None) -> str:
    root = resolve_data_dir(data_dir)
    files = sorted((root / "tasks").glob("*.jsonl.gz")) + sorted((root / "corpus").glob("*.jsonl*"))
    return hashlib.sha256("|".join(f"{f.name}:{file_fingerprint(f)}" for f in files).encode()).hexdigest()[:16]


def _key(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_pairs(
    config: ReaderConfig, split: str, max_tasks: int | None = None, data_fp: str | None = None
) -> list[ReadingPair]:
    """The split's reading pairs (cached under ``reader/pairs``)."""
    data_fp = data_fp or _data_fingerprint(config.data_dir)
    key = _key({**config.pairs_fields(split, max_tasks), "data": data_fp, "version": PAIRS_VERSION})
    path = cache_dir("reader", "pairs") / f"{split}-{key}.pkl"
    if path.exists():
        with open(path, "rb") as fh:
            return pickle.load(fh)
    pairs = collect_pairs(
        split,
        config.executor,
        max_tasks,
        config.seed,
        config.intervene_prob,
        config.topk,
        config.data_dir,
        config.benchmarks,
    )
    atomic_write_bytes(path, pickle.dumps(pairs, protocol=pickle.HIGHEST_PROTOCOL))
    return pairs


def roc_auc(labels: npt.ArrayLike, scores: npt.ArrayLike) -> float:
    from sklearn.metrics import roc_auc_score

    y = np.asarray(labels)
    if y.min(initial=1) == y.max(initial=0):
        return float("nan")
    return float(roc_auc_score(y, np.asarray(scores)))


@dataclass
class AnswerabilityModel:
    """A trained reader. ``score(question, documents)`` -> one probability per document."""

    config: ReaderConfig
    classifier_name: str
    classifier: Any
    mean: np.ndarray
    scale: np.ndarray
    dev_auc: dict[str, float] = field(default_factory=dict)
    _store: EmbeddingStore | None = field(default=None, repr=False)

    @property
    def n_features(self) -> int:
        return int(self.mean.shape[0])

    @property
    def store(self) -> EmbeddingStore:
        if self._store is None:
            self._store = EmbeddingStore(make_encoder(self.config.encoder))
        return self._store

    def features(
        self, questions: Sequence[str], documents: Sequence[Document], progress: bool = False, save: bool = True
    ) -> np.ndarray:
        return build_features(self.config, self.store, questions, documents, progress, save)

    def score_features(self, x: np.ndarray) -> np.ndarray:
        if not len(x):
            return np.zeros(0, dtype=np.float32)
        return self.classifier.predict_proba((x - self.mean) / self.scale)[:, 1].astype(np.float32)

    def score(self, question: str, documents: Sequence[Document]) -> np.ndarray:
        """P(holds a gold answer) of each document, for one question (online: vectors are cached, not saved per
        call)."""
        docs = list(documents)
        return self.score_features(self.features([question] * len(docs), docs, save=False))

    def score_observation(self, observation: Any) -> np.ndarray:
        """Scores of the latest retrieved documents of an env observation ([] before the first search)."""
        goal = str(observation.get("goal", "")) if isinstance(observation, Mapping) else ""
        return self.score(goal, observation_documents(observation))

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_store"] = None  # vectors live in the cache file, not in every pickled env
        return state


def build_features(
    config: ReaderConfig,
    store: EmbeddingStore,
    questions: Sequence[str],
    documents: Sequence[Document],
    progress: bool = False,
    save: bool = True,
) -> np.ndarray:
    views: dict[str, QuestionView] = {}
    lexical = (
        np.stack([lexical_features(views.setdefault(q, QuestionView(q)), d) for q, d in zip(questions, documents)])
        if len(documents)
        else np.zeros((0, len(LEXICAL_NAMES)), dtype=np.float32)
    )
    qvec = store.vectors(list(questions), save=save)
    pvec = store.vectors([d.contents for d in documents], progress=progress, save=save)
    return pair_features(lexical, qvec, pvec, config.interactions)


def _pair_arrays(
    config: ReaderConfig, store: EmbeddingStore, pairs: Sequence[ReadingPair], progress: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    x = build_features(config, store, [p.question for p in pairs], [p.document for p in pairs], progress)
    return x, np.asarray([p.label for p in pairs], dtype=np.int64)


def reader_key(config: ReaderConfig, data_fp: str | None = None) -> str:
    encoder = make_encoder(config.encoder)
    return _key(
        {
            **asdict(config),
            "encoder_fp": encoder.fingerprint,
            "data": data_fp or _data_fingerprint(config.data_dir),
            "version": FEATURE_VERSION,
            "pairs_version": PAIRS_VERSION,
        }
    )


def train_reader(
    config: ReaderConfig | None = None, use_cache: bool = True, progress: bool = False, log=None
) -> AnswerabilityModel:
    """Train (or load from the cache) the reader a config describes; the classifier is chosen on dev AUC."""
    config = config or ReaderConfig()
    log = log or (lambda msg: None)
    data_fp = _data_fingerprint(config.data_dir)
    path = cache_dir("reader", "models") / f"reader-{reader_key(config, data_fp)}.pkl"
    if use_cache and path.exists():
        with open(path, "rb") as fh:
            reader = pickle.load(fh)
        log(f"reader loaded from the cache: {path}")
        return reader
    store = EmbeddingStore(make_encoder(config.encoder))
    t0 = time.perf_counter()
    train = load_pairs(config, "train", config.train_tasks, data_fp)
    dev = load_pairs(config, "dev", config.dev_tasks, data_fp)
    log(
        f"pairs: train {len(train)} ({sum(p.label for p in train)} positive), dev {len(dev)} "
        f"({sum(p.label for p in dev)} positive) [{time.perf_counter() - t0:.0f} s]"
    )
    x_train, y_train = _pair_arrays(config, store, train, progress)
    x_dev, y_dev = _pair_arrays(config, store, dev, progress)
    log(f"features: {x_train.shape[1]} per pair ({store.encoded} texts encoded) [{time.perf_counter() - t0:.0f} s]")
    if y_train.min() == y_train.max():
        raise SteerEnvsError(
            f"the train pairs have a single label ({int(y_train[0])}); give more train tasks "
            f"(train_tasks={config.train_tasks})"
        )
    mean = x_train.mean(axis=0)
    scale = x_train.std(axis=0)
    scale[scale < 1e-6] = 1.0
    best: tuple[float, str, Any] | None = None
    dev_auc: dict[str, float] = {}
    for name in config.classifiers:
        model = CLASSIFIERS[name](config.seed).fit((x_train - mean) / scale, y_train)
        auc = roc_auc(y_dev, model.predict_proba((x_dev - mean) / scale)[:, 1])
        dev_auc[name] = auc
        log(f"  {name}: dev AUC {auc:.4f}")
        if best is None or auc > best[0]:
            best = (auc, name, model)
    assert best is not None
    reader = AnswerabilityModel(config, best[1], best[2], mean.astype(np.float32), scale.astype(np.float32), dev_auc)
    atomic_write_bytes(path, pickle.dumps(reader, protocol=pickle.HIGHEST_PROTOCOL))
    log(f"chose {best[1]} (dev AUC {best[0]:.4f}); saved {path} [{time.perf_counter() - t0:.0f} s]")
    return reader


@dataclass(frozen=True)
class ReaderEvaluation:
    split: str
    auc: float
    pairs: int
    positives: int
    tasks: int
    auc_by_benchmark: dict[str, float]


def evaluate_reader(
    reader: AnswerabilityModel, split: str = "test", max_tasks: int | None = None, progress: bool = False
) -> ReaderEvaluation:
    """ROC AUC of the reader on a split's reading pairs (states of the same executor and collecting policy)."""
    pairs = load_pairs(reader.config, split, max_tasks)
    x, y = _pair_arrays(reader.config, reader.store, pairs, progress)
    scores = reader.score_features(x)
    by_bench: dict[str, float] = {}
    for bench in sorted({p.benchmark for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if p.benchmark == bench]
        by_bench[bench] = roc_auc(y[idx], scores[idx])
    return ReaderEvaluation(
        split, roc_auc(y, scores), len(pairs), int(y.sum()), len({p.task_id for p in pairs}), by_bench
    )


_SHARED: dict[ReaderConfig, AnswerabilityModel] = {}


def shared_reader(config: ReaderConfig | None = None) -> AnswerabilityModel:
    """One trained reader per config and process (wrappers and steerers of a process share it)."""
    config = config or ReaderConfig()
    if config not in _SHARED:
        _SHARED[config] = train_reader(config)
    return _SHARED[config]
