"""The command line: data info, search, and bad input that must never print a traceback."""

import subprocess
import sys

import pytest

from steer_envs.cli.main import main


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "steer_envs.cli.main", *args], capture_output=True, text=True, env=env)


def test_data_info_counts(capsys, shared_data_dir):
    assert main(["data", "info", "--data-dir", str(shared_data_dir)]) == 0
    out = capsys.readouterr().out
    for row in (
        "nq                  1610    270    775",
        "bamboogle             76     13     36",
        "musique              186     28     86",
        "2wikimultihopqa      879    164    421",
    ):
        assert row in out
    assert "corpus: 48907 passages" in out
    assert "search_r1_base" in out and "5250 rows" in out


def test_search_shows_rontgen(capsys, shared_data_dir):
    assert (
        main(["search", "who got the first nobel prize in physics", "-k", "3", "--data-dir", str(shared_data_dir)]) == 0
    )
    assert "Röntgen" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,message",
    [
        (["search", " "], "the search query is empty"),
        (["search", "nobel", "-k", "0"], "k must be an integer between 1 and 100"),
        (["data", "info", "--data-dir", "/does/not/exist"], "data folder '/does/not/exist'"),
        (["retrieval-recall", "--split", "validation"], "unknown split 'validation'; valid splits: dev, test, train"),
        (["search", "x", "--retriever", "elastic"], "unknown retriever kind 'elastic'"),
    ],
)
def test_bad_input_is_a_clear_error_not_a_traceback(args, message):
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_no_data_folder_names_both_ways(tmp_path):
    import os

    env = dict(os.environ, STEER_ENVS_DATA=str(tmp_path / "none"))
    result = run_cli("data", "info", env=env)
    assert result.returncode == 2 and "STEER_ENVS_DATA" in result.stderr and "Traceback" not in result.stderr


def test_a_folder_that_is_not_a_data_folder_fails_before_printing_anything(tmp_path):
    import os

    (tmp_path / "notes.txt").write_text("not data")
    result = run_cli("data", "info", env=dict(os.environ, STEER_ENVS_DATA=str(tmp_path)))
    assert result.returncode == 2 and result.stdout == ""  # no table header before the error
    assert "has neither tasks/ nor corpus/" in result.stderr and "STEER_ENVS_DATA" in result.stderr


def test_version_and_python_dash_m(capsys):
    from steer_envs import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.strip() == f"steer-envs {__version__}"
    result = subprocess.run([sys.executable, "-m", "steer_envs", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "usage: steer-envs" in result.stdout and "eval" in result.stdout


def test_broken_pipe_is_quiet(shared_data_dir):
    proc = subprocess.Popen(
        [sys.executable, "-m", "steer_envs.cli.main", "data", "info"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader goes away before the output comes, as `steer-envs data info | head -1` does
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()
