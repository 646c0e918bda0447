"""``steer-envs serve-retriever`` as a real process: it prints its address, answers Search-R1 requests, stops."""

import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest


def run_cli(*args, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "steer_envs.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )


def test_bad_topk_is_a_clear_error():
    result = run_cli("serve-retriever", "--topk", "0")
    assert result.returncode == 2
    assert "--topk must be between 1 and 100" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_serves_on_loopback_and_answers(shared_data_dir):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "steer_envs.cli.main",
            "serve-retriever",
            "--port",
            "0",
            "--topk",
            "2",
            "--data-dir",
            str(shared_data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        line = proc.stdout.readline()  # printed once the index is ready
        match = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = match.group(1)
        request = urllib.request.Request(
            url + "/retrieve",
            data=json.dumps({"queries": ["danube delta"]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            docs = json.loads(response.read())["result"][0]
        assert len(docs) == 2 and "Danube" in docs[0]["contents"]
    finally:
        proc.terminate()
        proc.wait(10)
