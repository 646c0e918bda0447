"""One torch intra-op thread for CPU runs: a default, never a rule.

Why: the suite's loops (rollouts, small-network updates, scoring) call torch on many small tensors from a process
that also runs the simulator and BM25; on a machine with few cores torch's default thread pool oversubscribes it
and makes these runs slower, not faster (measured on the 2-core reference machine). On a GPU the opposite holds:
the host threads feed the device and belong to torch, so a run whose device is not the CPU keeps torch's setting.
``$STEER_ENVS_TORCH_THREADS`` overrides the CPU default (e.g. all cores for one large CPU model).
"""

from __future__ import annotations

import os

from .errors import SteerEnvsError

THREADS_VARIABLE = "STEER_ENVS_TORCH_THREADS"


def runs_on_cpu(*devices: object) -> bool:
    """True when every named device is the CPU (``None`` counts as the CPU default); ``"auto"`` is a GPU when
    one is present."""
    for device in devices:
        name = str(device or "cpu").lower()
        if name == "auto":
            import torch

            if torch.cuda.is_available():
                return False
        elif not name.startswith("cpu"):
            return False
    return True


def cpu_thread_default(*devices: object) -> None:
    """Set torch's intra-op threads to ``$STEER_ENVS_TORCH_THREADS`` (default 1) when the run is CPU-only."""
    if not runs_on_cpu(*devices):
        return
    raw = os.environ.get(THREADS_VARIABLE, "1")
    try:
        threads = int(raw)
        if threads < 1:
            raise ValueError
    except ValueError:
        raise SteerEnvsError(f"${THREADS_VARIABLE}={raw!r}: give a positive number of torch threads, e.g. 1") from None
    import torch

    torch.set_num_threads(threads)
