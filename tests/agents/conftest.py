"""Fixtures shared by the agent tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> str:
    """A tiny random causal LM saved as a Hugging Face folder (built offline, per test module)."""
    from steer_envs.llm.tiny import build_tiny_causal_lm

    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("tiny") / "lm"))
