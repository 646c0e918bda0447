"""Moved to :mod:`benchmarks.perf.perf_scale` (the perf suite's folder); this path keeps ``python -m benchmarks.perf_scale`` and
old imports working."""
from benchmarks.perf.perf_scale import *  # noqa: F401,F403
from benchmarks.perf import perf_scale as _moved

globals().update({k: v for k, v in vars(_moved).items() if not k.startswith("__")})
