"""A reader for steerers: does this retrieved passage hold the answer to this question?

The first thing a strong (LLM) steerer does at a decision is read the retrieved documents against the question;
the CPU steerers read behaviour only. :class:`AnswerabilityModel` gives any policy that signal: a small
classifier over lexical coverage, answer-type cues and encoder features (the packaged MiniLM by default, any
registered encoder), trained on the train split's gold answers over the passages the executor itself retrieves,
chosen on dev, cached. See :mod:`.model` for training and caching, :mod:`.states` for the pairs,
:class:`steer_envs.wrappers.AnswerabilityReader` for the wrapper that puts its scores into ``info``.
"""

from .encoders import (
    ENCODERS,
    HashEncoder,
    MiniLMTextEncoder,
    NoEncoder,
    TextEncoder,
    check_encoder_spec,
    make_encoder,
    register_encoder,
)
from .features import LEXICAL_NAMES, lexical_features, question_type
from .labels import holds_answer, normalised_answers
from .model import (
    CLASSIFIERS,
    FEATURE_VERSION,
    AnswerabilityModel,
    ReaderConfig,
    ReaderEvaluation,
    evaluate_reader,
    load_pairs,
    roc_auc,
    shared_reader,
    train_reader,
)
from .states import Document, ReadingPair, collect_pairs, latest_documents, observation_documents, parse_documents

__all__ = [
    "CLASSIFIERS",
    "ENCODERS",
    "FEATURE_VERSION",
    "LEXICAL_NAMES",
    "AnswerabilityModel",
    "Document",
    "HashEncoder",
    "MiniLMTextEncoder",
    "NoEncoder",
    "ReaderConfig",
    "ReaderEvaluation",
    "ReadingPair",
    "TextEncoder",
    "check_encoder_spec",
    "collect_pairs",
    "evaluate_reader",
    "holds_answer",
    "latest_documents",
    "lexical_features",
    "load_pairs",
    "make_encoder",
    "normalised_answers",
    "observation_documents",
    "parse_documents",
    "question_type",
    "register_encoder",
    "roc_auc",
    "shared_reader",
    "train_reader",
]
