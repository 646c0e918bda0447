"""torch's one-thread default applies to CPU runs only, and ``$STEER_ENVS_TORCH_THREADS`` overrides it."""

from __future__ import annotations

import pytest
import torch

from steer_envs.cpu_threads import THREADS_VARIABLE, cpu_thread_default, runs_on_cpu
from steer_envs.errors import SteerEnvsError


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_cpu_runs_get_one_thread_unless_the_variable_says_otherwise(restore_threads, monkeypatch):
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    torch.set_num_threads(2)
    cpu_thread_default("cpu", None)
    assert torch.get_num_threads() == 1
    monkeypatch.setenv(THREADS_VARIABLE, "2")
    cpu_thread_default()
    assert torch.get_num_threads() == 2


def test_a_gpu_device_keeps_torchs_own_setting(restore_threads, monkeypatch):
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    torch.set_num_threads(2)
    cpu_thread_default("cpu", "cuda:0")  # a GPU steerer in a CPU-configured trainer is a GPU run
    assert torch.get_num_threads() == 2
    assert (
        not runs_on_cpu("cuda") and runs_on_cpu("cpu", None) and runs_on_cpu("auto") == (not torch.cuda.is_available())
    )


def test_a_bad_thread_count_says_what_to_give(monkeypatch):
    monkeypatch.setenv(THREADS_VARIABLE, "many")
    with pytest.raises(SteerEnvsError, match="positive number of torch threads"):
        cpu_thread_default()
