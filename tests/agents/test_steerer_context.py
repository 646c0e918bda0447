"""A steerer's prompt fits its model's context: the goal kept, the oldest turns elided behind a visible marker, the
count kept; the served steerer refits when the server still refuses, and an evaluation over a small-context server
finishes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.steering.causal_lm import FAST_QUESTION, CausalLMSteerer
from agents.steering.context_fit import FittedText, fit_observation, fit_prompt_ids, special_prefix, split_turns
from agents.steering.interventions import options_from_catalogue
from agents.steering.served import ServedSteerer
from steer_envs.envs.catalogue import STEERING
from steer_envs.executors.protocol import INVALID_ACTION_REPLY, render_guidance, render_information, render_search
from steer_envs.retrieval.base import Hit
from tests.servers.openai_server import OpenAICompatibleServer

MARKER = "earlier turns elided to fit the model's context"


def _turn(i: int) -> str:
    hits = [
        Hit(
            f"d{i}-{j}", f"Title {i}.{j}", f"The river flows through the old town near the mountains {i} {j}. " * 3, 1.0
        )
        for j in range(3)
    ]
    return f"<think> step {i} </think>\n" + render_search(f"query number {i}") + render_information(hits)


def long_observation(turns: int = 40) -> dict:
    transcript = "".join(_turn(i) for i in range(turns)) + render_guidance("refocus") + INVALID_ACTION_REPLY
    return {
        "goal": "Who directed the film Jaws?",
        "transcript": transcript,
        "turn": np.int64(turns),
        "interventions": np.int64(1),
    }


def test_turns_split_losslessly_and_the_latest_survive():
    obs = long_observation(12)
    turns = split_turns(obs["transcript"])
    assert "".join(turns) == obs["transcript"] and len(turns) == 14  # 12 search turns, the note, the reply
    fitted = fit_observation(obs, lambda text: len(text) <= 3000)
    assert isinstance(fitted, FittedText) and 0 < fitted.elided_turns < 14 and not fitted.cut
    assert fitted.text.startswith("Goal: Who directed the film Jaws?") and len(fitted.text) <= 3000
    assert f"[... {fitted.elided_turns} {MARKER} ...]" in fitted.text
    assert fitted.text.endswith(INVALID_ACTION_REPLY) and "query number 11" in fitted.text
    assert "query number 0 " not in fitted.text
    tiny = fit_observation(obs, lambda text: len(text) <= 200)  # not even the latest turn fits: its start is cut
    assert tiny.cut and len(tiny.text) <= 200 and tiny.text.startswith("Goal: Who directed")
    assert fit_observation(obs, lambda text: True) == FittedText(fit_observation(obs, lambda t: True).text)


def test_the_goal_is_never_cut():
    """Below the room the goal needs, fitting refuses and hands back the whole goal (callers say what they need)."""
    from agents.steering.context_fit import GoalDoesNotFitError

    obs = long_observation(12)
    with pytest.raises(GoalDoesNotFitError) as caught:
        fit_observation(obs, lambda text: len(text) <= 30)
    assert caught.value.text.startswith("Goal: Who directed the film Jaws?") and caught.value.elided_turns == 14
    assert fit_observation(obs, lambda text: len(text) <= len(caught.value.text)).text == caught.value.text


def test_a_prompt_in_ids_is_prefix_text_and_question_within_its_budget():
    """The one prompt both steerers score: the tokenizer's prefix, the fitted text and the question, tokenised
    apart; here a 'tokenizer' of one id per character."""
    encode = lambda text: [ord(c) for c in text]  # noqa: E731
    observation = long_observation(12)
    ids, fitted = fit_prompt_ids(observation, encode("?"), [1], 600, encode)
    assert len(ids) <= 600 and ids[0] == 1 and ids[-1] == ord("?") and ids[1:-1] == encode(fitted.text)
    assert fitted.elided_turns > 0 and MARKER in fitted.text
    assert special_prefix([2, 7, 8], [7, 8]) == [2] and special_prefix([7, 8], [7, 8]) == []


def test_a_causal_lm_steerer_too_small_for_the_goal_refuses_with_the_context_it_needs(tmp_path):
    from agents.steering.context_fit import GoalDoesNotFitError
    from steer_envs.llm.tiny import build_tiny_causal_lm

    folder = build_tiny_causal_lm(tmp_path / "lm", max_positions=160)
    steerer = CausalLMSteerer(options_from_catalogue(STEERING), model=str(folder), max_think_tokens=6)
    assert steerer.prompt_budget == 160 - 6 - 64
    obs = long_observation()
    with pytest.raises(GoalDoesNotFitError, match=r"at least (\d+) tokens") as caught:
        steerer.fast_scores([obs])
    needed = int(str(caught.value).split("at least ")[1].split()[0])
    assert needed > 160 and "The goal is never cut" in str(caught.value)
    big = build_tiny_causal_lm(tmp_path / "big", max_positions=needed)
    fits = CausalLMSteerer(options_from_catalogue(STEERING), model=str(big), max_think_tokens=6)
    text = fits.tokenizer.decode(fits.fast_prompt_ids(obs))  # the number named is enough: the goal whole
    assert "Who directed the film Jaws?" in text and MARKER in text


@pytest.fixture(scope="module")
def server_2048(tiny_backend):
    with OpenAICompatibleServer(tiny_backend, model_name="tiny", max_model_len=2048) as server:
        yield server


def test_served_steerer_fits_a_2048_token_model_and_refits_a_bad_estimate(server_2048, tiny_backend):
    obs = long_observation()
    assert tiny_backend.count_prompt_tokens(obs["transcript"]) > 3 * 2048  # far beyond the context
    steerer = ServedSteerer(
        options_from_catalogue(STEERING),
        server_2048.spec,
        max_prompt_chars=10**6,
        max_think_tokens=8,
        max_line_tokens=6,
        chars_per_token=6.0,
    )  # an estimate too hopeful
    z = steerer.fast_scores([obs, obs])
    assert z.shape == (2,) and bool(torch.isfinite(z).all())
    stats = steerer.context_stats
    assert stats.refits >= 1 and stats.fallbacks == 0 and steerer.fit_scale < 1.0
    assert stats.elided_prompts >= 2 and stats.elided_turns > 0
    prompt = steerer.prompt_text(obs, FAST_QUESTION)
    assert MARKER in prompt and prompt.startswith("Goal: Who directed") and prompt.endswith(FAST_QUESTION)
    assert tiny_backend.count_prompt_tokens(prompt) + 1 <= 2048
    [sample] = steerer.sample_slow(obs, 1, torch.Generator().manual_seed(0))
    assert "Intervention: " in sample.payload["output"] and stats.fallbacks == 0


def test_served_steerer_falls_back_rather_than_abort(server_2048):
    steerer = ServedSteerer(
        options_from_catalogue(STEERING), server_2048.spec, max_prompt_chars=10**6, chars_per_token=16.0, max_refits=0
    )  # no second try allowed
    z = steerer.fast_scores([long_observation()])
    assert float(z[0]) == 0.0 and steerer.context_stats.fallbacks == 1
    [sample] = steerer.sample_slow(long_observation(), 1, torch.Generator().manual_seed(0))
    assert sample.option is None and not sample.payload["parsed"] and steerer.context_stats.fallbacks == 2


def test_causal_lm_steerer_fits_its_models_context(tmp_path):
    from steer_envs.llm.tiny import build_tiny_causal_lm

    folder = build_tiny_causal_lm(tmp_path / "lm", max_positions=512)
    steerer = CausalLMSteerer(
        options_from_catalogue(STEERING), model=str(folder), max_prompt_tokens=10**6, max_think_tokens=6
    )
    assert steerer.context_length == 512 and steerer.prompt_budget == 512 - 6 - 64
    obs = long_observation()
    ids = steerer.fast_prompt_ids(obs)
    assert len(ids) <= steerer.prompt_budget
    text = steerer.tokenizer.decode(ids)
    assert MARKER in text and "Who directed the film Jaws?" in text and text.endswith(FAST_QUESTION)
    z = steerer.fast_scores([obs])
    assert bool(torch.isfinite(z).all())
    samples = steerer.sample_slow(obs, 2, torch.Generator().manual_seed(0))
    assert steerer.slow_logprobs(obs, samples).shape == (2,)
    stats = steerer.context_stats
    assert stats.elided_prompts == stats.prompts >= 3 and stats.elided_turns > 0


def test_eval_with_a_steerer_over_a_small_context_server_finishes(tiny_backend, tmp_path):
    """The acceptance path: ``steer-envs eval --method steering_zero_shot:model=openai:NAME@URL`` against a server
    whose context is smaller than the steerer's prompts would be uncut."""
    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate

    with OpenAICompatibleServer(tiny_backend, model_name="tiny", max_model_len=256) as server:
        folder = RunFolder(tmp_path / "run", EvalConfig(benchmarks=("nq",), split="dev", limit=2, seeds=1, max_turns=4))
        spec = f"steering_zero_shot:model={server.spec},tau=0.02,prompt_chars=100000,think_tokens=8"
        outcome = evaluate(folder, spec, progress=False, log=lambda _: None)
    assert outcome.ran == 2 and all(r.decisions >= 1 and not r.failed for r in outcome.records)


@pytest.mark.slow
def test_a_training_round_on_a_2048_token_model_fits_long_states_instead_of_aborting(tmp_path):
    """The steering trainer with a causal-LM steerer whose only prompt limit is its model's 2,048-token context:
    the state bank's late states (ten-turn transcripts, far past 2,048 tokens of the tiny tokenizer) are fitted,
    and the round (fast-path scoring, slow-path sampling, GRPO's re-scoring, the update) completes."""
    from agents.steering.config import SteeringConfig
    from agents.steering.trainer import SteeringTrainer, load_model
    from steer_envs.llm.tiny import build_tiny_causal_lm

    folder = build_tiny_causal_lm(tmp_path / "lm", max_positions=2048)
    cfg = SteeringConfig(
        m=1,
        k=4,
        G=2,
        N=1,
        bank_tasks=3,
        benchmarks=["hotpotqa"],
        backbone="causal_lm",
        backbone_args={"model": str(folder), "max_think_tokens": 4, "max_prompt_tokens": 10**6},
    )
    result = SteeringTrainer(cfg, tmp_path / "run").run()
    assert len(result.log) == 1 and result.log[0]["states"] == 4
    steerer, _ = load_model(tmp_path / "run")
    assert steerer.context_length == 2048
    long_state = long_observation(40)
    assert len(steerer.fast_prompt_ids(long_state)) <= steerer.prompt_budget < 2048
    assert bool(torch.isfinite(steerer.fast_scores([long_state])).all())
    assert steerer.context_stats.elided_prompts >= 1
