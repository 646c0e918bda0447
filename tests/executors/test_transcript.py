"""The transcript parser on every recorded row of the four real trajectory files, plus hand-made edge cases."""

import re

import pytest

from steer_envs.data import load_rollouts, trajectory_files
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.protocol import INVALID_ACTION_REPLY
from steer_envs.executors.transcript import (
    RecordedTurn,
    final_answer,
    parse_rollout,
    parse_transcript,
    recorded_queries,
)

SOURCES = ["search_r1_base", "search_r1_instruct", "r1_searcher_qwen", "r1_searcher_llama"]


def independent_search_count(response: str, fmt: str) -> int:
    """Searches that the environment answered, counted by one global regex (no turn walking): a stop sequence
    immediately followed by the environment's result block."""
    if fmt == "search-r1":
        return len(re.findall(r"</search>\n\n<information>", response))
    return len(re.findall(r"<\|end_of_query\|>\n\n<\|begin_of_documents\|>", response))


def test_all_four_sources_are_present(shared_data_dir):
    assert set(SOURCES) <= set(trajectory_files(shared_data_dir))


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES)
def test_every_row_parses_losslessly_with_the_right_search_count(source, shared_data_dir):
    rows = load_rollouts(source, shared_data_dir)
    assert len(rows) > 100
    answered = 0
    for i, row in enumerate(rows):
        turns = parse_rollout(row)
        assert turns, f"{source} row {i}: no turns"
        assert "".join(t.text for t in turns) == row.response, f"{source} row {i}: turns do not rebuild the response"
        assert [t.index for t in turns] == list(range(len(turns)))
        searches = [t for t in turns if t.kind == "search"]
        assert len(searches) == independent_search_count(row.response, row.format), f"{source} row {i}"
        # only the last turn may end the episode
        assert all(t.kind in ("search", "invalid") for t in turns[:-1]), f"{source} row {i}"
        for t in searches:
            assert t.query is not None and t.documents, f"{source} row {i}: search without query or documents"
        if turns[-1].kind == "answer":
            answered += 1
            assert turns[-1].answer is not None
    # the recordings do contain unfinished rollouts (search_r1_base) but most rows answer
    assert answered / len(rows) > 0.85


def test_r1_searcher_answers_match_the_recorded_prediction(shared_data_dir):
    rows = load_rollouts("r1_searcher_llama", shared_data_dir)[:200]
    agree = sum(final_answer(parse_rollout(r)) == str(r.meta["recorded_prediction"]).strip() for r in rows)
    assert agree / len(rows) > 0.95


def test_invalid_action_reply_is_not_a_search():
    """Search-R1's invalid-action reply contains '<search> and </search>': it must not count as a query."""
    response = (
        "<think> I know it </search>"
        + INVALID_ACTION_REPLY
        + '<search> capital of france </search>\n\n<information>Doc 1(Title: "Paris") Paris is the capital.\n'
        "Doc 2(Title: France) France ...</information>\n\n<answer> Paris </answer>"
    )
    turns = parse_transcript(response, "search-r1")
    assert [t.kind for t in turns] == ["invalid", "search", "answer"]
    assert turns[0].observation == INVALID_ACTION_REPLY
    assert recorded_queries(turns) == ["capital of france"]
    assert [d.title for d in turns[1].documents] == ["Paris", "France"]
    assert final_answer(turns) == "Paris"


def test_hallucinated_information_block_stays_model_text():
    response = "<information>Doc 1(Title: X) made up</information> I think <answer> 42 </answer>"
    turns = parse_transcript(response, "search-r1")
    assert [t.kind for t in turns] == ["answer"]
    assert turns[0].observation == "" and turns[0].answer == "42"


def test_truncated_rollout_is_unfinished():
    turns = parse_transcript("<think> let me search for the answer and then", "search-r1")
    assert [t.kind for t in turns] == ["unfinished"]
    assert final_answer(turns) is None


def test_r1_searcher_format_with_boxed_and_final_text():
    docs = (
        "\n\n<|begin_of_documents|>\n(1)Paris   Paris is the capital of France.\n(2)Lyon   A city."
        "\n<|end_of_documents|>\n\n"
    )
    boxed = "I search <|begin_of_query|> capital of France<|end_of_query|>" + docs + "So it is \\boxed{Paris}."
    turns = parse_transcript(boxed, "r1-searcher")
    assert [t.kind for t in turns] == ["search", "answer"]
    assert turns[0].query == "capital of France"
    assert [(d.rank, d.title) for d in turns[0].documents] == [(1, "Paris"), (2, "Lyon")]
    assert turns[1].answer == "Paris"
    plain = "I search <|begin_of_query|> capital of France<|end_of_query|>" + docs + "Thinking.\nThe answer is Paris"
    assert final_answer(parse_transcript(plain, "r1-searcher")) == "The answer is Paris"


def test_unknown_format_and_non_string_are_clear_errors():
    with pytest.raises(SteerEnvsError, match="unknown transcript format 'xml'.*search-r1"):
        parse_transcript("x", "xml")
    with pytest.raises(SteerEnvsError, match="must be a string"):
        parse_transcript(None, "search-r1")  # type: ignore[arg-type]


def test_recorded_turn_text_is_segment_plus_observation():
    t = RecordedTurn(0, "search", "<search> q </search>", "\n\n<information>x</information>\n\n", query="q")
    assert t.text == "<search> q </search>\n\n<information>x</information>\n\n"
