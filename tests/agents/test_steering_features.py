"""Observation features of the encoder steerer: behavioural statistics read from the text, and the fast path
that reads only them."""

import numpy as np
import pytest

from agents.steering.encoder import EncoderSteerer
from agents.steering.features import (
    FAST_EXTRA_NAMES,
    STAT_NAMES,
    HashedNgramFeaturizer,
    fast_extra_stats,
    goal_entities,
    own_text,
    transcript_stats,
)
from agents.steering.interventions import options_from_catalogue
from steer_envs.envs.catalogue import STEERING
from steer_envs.executors.protocol import INVALID_ACTION_REPLY

GOAL = "Who is older, Annie Morton or Terry Richardson?"
SEARCH = (
    "<think> I need to find some information to answer this question. Let me search. </think>\n"
    "<search> Annie Morton </search>\n\n<information>Doc 1(Title: Annie Morton) Annie Morton (born October 8, 1970) "
    "is an American model.\nDoc 2(Title: Terry Richardson) Terrence Richardson (born August 14, 1965)."
    "</information>\n\n"
)
RAMBLE = "<think> Let me think about older Annie Morton step by step. </think>" + INVALID_ACTION_REPLY


def _stats(transcript: str, turn: int, interventions: int = 0) -> dict[str, float]:
    return dict(zip(STAT_NAMES, transcript_stats(GOAL, transcript, turn, interventions).tolist()))


def test_statistics_describe_the_latest_turn_and_progress():
    start = _stats("", 0)
    assert start["no_search_yet"] == 1 and start["last_turn_search"] == 0 and start["last_turn_invalid"] == 0
    after = _stats(SEARCH, 1)
    assert after["one_search"] == 1 and after["no_search_yet"] == 0 and after["last_turn_search"] == 1
    assert after["goal_entities_in_titles"] == 1.0  # both entities of the goal are titles of the results
    rambling = _stats(SEARCH + RAMBLE, 2)
    assert rambling["last_turn_invalid"] == 1 and rambling["last_turn_search"] == 0
    assert rambling["invalid_turns"] == pytest.approx(0.2) and rambling["turn"] == pytest.approx(0.2)
    guided = _stats(SEARCH + "\n<guidance> Verify the evidence. </guidance>\n", 1, 1)
    assert (
        guided["has_guidance"] == 1
        and guided["interventions"] == pytest.approx(1 / 3)
        and guided["last_guidance_turns_ago"] == 0
    )
    # question shape: a comparison of two entities
    assert after["goal_comparison"] == 1 and after["goal_entities"] == 0.5
    assert goal_entities(GOAL) == ["annie morton", "terry richardson"]


def test_fast_only_statistics_turn_one_hot_and_invalid_streak():
    def extra(transcript: str, turn: int) -> dict[str, float]:
        return dict(zip(FAST_EXTRA_NAMES, fast_extra_stats(transcript, turn).tolist()))

    for turn, hot in ((0, "turn_is_0"), (3, "turn_is_3"), (9, "turn_ge_9"), (10, "turn_ge_9")):
        e = extra("", turn)
        assert e[hot] == 1 and sum(v for k, v in e.items() if k.startswith("turn_")) == 1
    assert extra(SEARCH, 1)["invalid_streak"] == 0
    assert extra(RAMBLE + RAMBLE, 2)["invalid_streak"] == pytest.approx(2 / 5)
    assert extra(RAMBLE + SEARCH + RAMBLE, 3)["invalid_streak"] == pytest.approx(1 / 5)  # a search ends the run
    note = "\n<guidance> Refocus on the goal. </guidance>\n"
    assert extra(RAMBLE + RAMBLE + note, 2)["invalid_streak"] == pytest.approx(2 / 5)  # a pending note is no turn


def test_own_text_drops_retrieved_documents_and_the_invalid_reply():
    text = own_text(SEARCH + RAMBLE)
    assert "Annie Morton (born" not in text and "My previous action is invalid" not in text
    assert "Let me think about older Annie Morton" in text and "<search> Annie Morton </search>" in text


def test_features_are_memoised_and_identical_for_equal_observations():
    feat = HashedNgramFeaturizer(1 << 12)
    obs = {"goal": GOAL, "transcript": SEARCH, "turn": np.int64(1), "interventions": np.int64(0)}
    a = feat(obs)
    assert feat(dict(obs)) is a  # an equal observation is served from the cache
    fresh = HashedNgramFeaturizer(1 << 12)(obs)
    assert np.array_equal(a.ids, fresh.ids) and np.array_equal(a.stats, fresh.stats)
    other = feat({**obs, "transcript": SEARCH + RAMBLE, "turn": np.int64(2)})
    assert not np.array_equal(other.stats, a.stats)


def test_stats_fast_path_reads_only_the_statistics():
    steerer = EncoderSteerer(options_from_catalogue(STEERING), hash_dim=1 << 12, fast_input="stats")
    base = {"goal": "who wrote the novel dune?", "transcript": "", "turn": 0, "interventions": 0}
    same_shape = {**base, "goal": "who sang the ballad hurt?"}  # other words, identical statistics
    assert np.array_equal(steerer.featurizer(base).stats, steerer.featurizer(same_shape).stats)
    z = steerer.fast_scores([base, same_shape, {**base, "transcript": SEARCH, "turn": 1}])
    assert float(z[0]) == pytest.approx(float(z[1]), abs=1e-6) and abs(float(z[2]) - float(z[0])) > 1e-4
    z.sum().backward()
    assert (
        steerer.fast_head.weight.grad is not None and steerer.bag.weight.grad is None
    )  # n-grams feed the slow path only
    shared = EncoderSteerer(options_from_catalogue(STEERING), hash_dim=1 << 12)  # default: the shared encoder
    zs = shared.fast_scores([base, same_shape])
    assert float(zs[0]) != float(zs[1])  # the shared encoder sees the words


def test_no_statistic_reads_the_agent_s_own_phrasing():
    """The same behaviour in other words gives the same statistics: thoughts are a real agent's words chosen by
    the observable situation, so a feature keyed on phrasing would learn one simulator, not behaviour."""
    plain = SEARCH.replace(
        "<think> I need to find some information to answer this question. Let me search. </think>\n", ""
    )
    worded = SEARCH.replace(
        "I need to find some information to answer this question. Let me search.",
        "I found that Annie Morton is relevant. The results do not give the answer yet.",
    )
    a, b = (dict(zip(STAT_NAMES, transcript_stats(GOAL, t, 1, 0).tolist())) for t in (plain, worded))
    assert a.pop("transcript_len") < b.pop("transcript_len")  # length (tokens) is generic; the words are not read
    assert a == b


def test_following_an_entity_from_the_results_is_a_statistic():
    second = (
        "<search> Annie Morton agency </search>\n\n<information>Doc 1(Title: Wilhelmina Models) a model agency."
        "</information>\n\n"
    )
    third = (
        "<search> Wilhelmina Models founder </search>\n\n<information>Doc 1(Title: Wilhelmina Cooper) born 1939."
        "</information>\n\n"
    )
    follows = _stats(SEARCH + second + third, 3)
    assert follows["last_query_follows_title"] == 1 and follows["queries_following_titles"] == pytest.approx(1 / 3)
    assert follows["last_query_off_goal"] == 1.0  # none of its words is in the question
    on_goal = _stats(SEARCH + second, 2)
    assert on_goal["last_query_follows_title"] == 0 and on_goal["last_query_off_goal"] == pytest.approx(1 / 3)
