"""Gymnasium wrappers over the steering environments.

* :class:`FeatureObservation` — a fixed-size numeric observation (hashed text features of ``O(g, s_t)`` plus
  counters) for libraries that cannot take text, e.g. Stable-Baselines3.
* :class:`InterventionCost` — charge a cost per intervention on top of any env that reports
  ``info["interventions"]``.
* :class:`ReferencePlanHint` — the first ``k`` actions of an ACTGUIDE reference plan per episode on GuidedSearch-v0
  (a fixed ``k``, the full plan, or a schedule), for any learner including Stable-Baselines3.
* :class:`EpisodeRecorder` — append every finished episode (observations, actions, rewards, final info) to a
  JSONL file, for offline datasets and debugging.
* :class:`AnswerabilityReader` — the reader's P(holds a gold answer) for the latest retrieved documents, in
  ``info["reader"]`` (and optionally the observation), see :mod:`steer_envs.reader`.
"""

from .cost import InterventionCost
from .features import FeatureObservation, TextFeaturizer
from .plan_hint import ReferencePlanHint
from .reader import AnswerabilityReader
from .recorder import EpisodeRecorder

__all__ = [
    "AnswerabilityReader",
    "EpisodeRecorder",
    "FeatureObservation",
    "InterventionCost",
    "ReferencePlanHint",
    "TextFeaturizer",
]
