"""The SB3 bridge's featurizer on hostile text: a vector of the declared size in [0, 1], in bounded time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from steer_envs.wrappers import TextFeaturizer
from tests.hostile import hostile_text, megabyte_text
from tests.timing import cpu_seconds_under

FEATURIZER = TextFeaturizer(buckets=64)


@settings(max_examples=200)
@given(hostile_text, hostile_text, st.integers(0, 50), st.integers(0, 50))
def test_any_text_gives_a_bounded_vector(goal, transcript, turn, interventions):
    vec = FEATURIZER(goal, transcript, turn, interventions)
    assert vec.shape == (FEATURIZER.size,) and vec.dtype == np.float32
    assert np.all(np.isfinite(vec)) and vec.min() >= 0.0 and vec.max() <= 1.0


@settings(max_examples=4, deadline=None)
@given(megabyte_text)
def test_a_megabyte_transcript_is_featurized_in_bounded_time(transcript):
    with cpu_seconds_under(20, typical_s=0.2):
        assert FEATURIZER("goal", transcript, 3, 1).shape == (FEATURIZER.size,)
