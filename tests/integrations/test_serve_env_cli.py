"""``steer-envs serve-env`` refuses bad arguments with a clear message before it imports OpenEnv or binds."""

import os
import subprocess
import sys


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "steer_envs.cli.main", "serve-env", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )


def test_unknown_env_id_lists_the_valid_ones():
    result = run_cli("Nope-v0")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "unknown env_id 'Nope-v0'" in result.stderr and "steer_envs/GuidedSearch-v0" in result.stderr


def test_env_kwargs_must_be_a_json_object():
    result = run_cli("GuidedSearch-v0", "--env-kwargs", "[1, 2]")
    assert result.returncode != 0 and "--env-kwargs must be a JSON object" in result.stderr
    result = run_cli("GuidedSearch-v0", "--env-kwargs", "{split: dev}")
    assert result.returncode != 0 and "--env-kwargs must be a JSON object" in result.stderr
