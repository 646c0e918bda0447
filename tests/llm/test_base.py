import math

import pytest

from steer_envs.errors import SteerEnvsError, UnknownNameError
from steer_envs.llm import GenerationConfig, make_backend, parse_backend_spec, truncate_at_stop
from steer_envs.llm.base import logsumexp, match_candidates


def test_generation_config_rejects_bad_settings_with_a_reason():
    with pytest.raises(SteerEnvsError, match="max_new_tokens"):
        GenerationConfig(max_new_tokens=0)
    with pytest.raises(SteerEnvsError, match="temperature"):
        GenerationConfig(temperature=-1)
    with pytest.raises(SteerEnvsError, match="top_p"):
        GenerationConfig(top_p=0)
    assert GenerationConfig(stop="</search>").stop == ("</search>",)
    assert GenerationConfig(temperature=0).greedy and not GenerationConfig(temperature=0.5).greedy


def test_truncate_at_stop_cuts_at_the_earliest_stop():
    assert truncate_at_stop("a <answer> x </answer> <search> q </search>", ["</search>", "</answer>"]) == (
        "a <answer> x ",
        "</answer>",
    )
    assert truncate_at_stop("no stop here", ["</search>"]) == ("no stop here", None)


def test_match_candidates_merges_space_variants_and_bounds_missing_ones():
    table = {" yes": math.log(0.5), "yes": math.log(0.1), " no": math.log(0.2), "the": math.log(0.05)}
    got = match_candidates(table, ["yes", "no", "maybe"])
    assert got["yes"] == pytest.approx(math.log(0.6))
    assert got["no"] == pytest.approx(math.log(0.2))
    assert got["maybe"] == pytest.approx(math.log(0.05))  # upper bound: the smallest listed
    assert logsumexp([-math.inf, -math.inf]) == -math.inf


def test_backend_specs_fail_with_the_valid_forms():
    with pytest.raises(SteerEnvsError, match="KIND:ARGUMENT"):
        parse_backend_spec("gemma")
    with pytest.raises(UnknownNameError, match="hf"):
        parse_backend_spec("vllm:foo")
    with pytest.raises(SteerEnvsError, match="openai:<model>@<base_url>"):
        make_backend("openai:no-url", shared=False)
    with pytest.raises(SteerEnvsError, match="http"):
        make_backend("openai:m@ftp://x", shared=False)
    with pytest.raises(SteerEnvsError, match="unknown openai backend option"):
        make_backend("openai:m@http://127.0.0.1:9", shared=False, colour="red")


def test_hf_backend_refuses_a_missing_folder_instead_of_downloading(tmp_path):
    with pytest.raises(SteerEnvsError, match="nothing is downloaded"):
        make_backend(f"hf:{tmp_path / 'no-such-model'}", shared=False)
    with pytest.raises(SteerEnvsError, match="not a model folder"):
        make_backend("hf:Qwen/Qwen2.5-7B-Instruct", shared=False)
