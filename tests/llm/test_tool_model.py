"""The tiny tool-calling model's folder check: a missing folder is a clear error naming the command that builds
it (transformers would read the path as a Hub id and fail on the network)."""

from __future__ import annotations

import pytest

from steer_envs.errors import SteerEnvsError
from steer_envs.llm.tool_model import tiny_tool_model


def test_a_missing_model_folder_names_the_command_that_builds_it(tmp_path):
    missing = tmp_path / "runs" / "tiny-tool-model"
    with pytest.raises(SteerEnvsError, match=f"steer-envs build-tiny-model {missing}"):
        tiny_tool_model(missing)
    missing.mkdir(parents=True)  # an empty folder is no model either
    with pytest.raises(SteerEnvsError, match="build-tiny-model"):
        tiny_tool_model(missing)
    (missing / "config.json").write_text("{}")
    assert tiny_tool_model(missing) == str(missing)


def test_the_command_refuses_to_replace_a_folder_that_is_not_a_model(tmp_path):
    from steer_envs.cli.main import main

    (tmp_path / "notes.txt").write_text("mine")
    assert main(["build-tiny-model", str(tmp_path)]) == 2  # refused before any build
    assert (tmp_path / "notes.txt").read_text() == "mine"
