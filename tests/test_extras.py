"""A missing optional dependency names the extra that installs it."""

import pytest

from steer_envs.errors import SteerEnvsError
from steer_envs.extras import MissingExtraError, import_extra


def test_an_installed_module_is_returned():
    assert import_extra("json", "llm", "anything").dumps([1]) == "[1]"


def test_a_missing_module_names_the_extra_and_the_feature():
    with pytest.raises(MissingExtraError, match=r'a LoRA steerer needs .*pip install "steer-envs\[llm\]"') as caught:
        import_extra("no_such_module_for_steer_envs", "llm", "a LoRA steerer")
    assert isinstance(caught.value, SteerEnvsError) and isinstance(caught.value, ImportError)


def test_a_lora_steerer_without_peft_says_which_extra(monkeypatch, tmp_path):
    import sys

    from agents.steering.causal_lm import CausalLMSteerer
    from agents.steering.interventions import options_from_catalogue
    from steer_envs.envs.catalogue import STEERING
    from steer_envs.llm.tiny import build_tiny_causal_lm

    folder = build_tiny_causal_lm(tmp_path / "lm")
    monkeypatch.setitem(sys.modules, "peft", None)  # as if the llm extra were not installed
    with pytest.raises(MissingExtraError, match=r"steer-envs\[llm\]"):
        CausalLMSteerer(options_from_catalogue(STEERING), model=str(folder), lora=True)
