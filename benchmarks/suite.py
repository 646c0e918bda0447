"""Moved to :mod:`benchmarks.perf.suite` (the perf suite's folder); this path keeps ``python -m benchmarks.suite`` and
old imports working."""
from benchmarks.perf.suite import *  # noqa: F401,F403
from benchmarks.perf import suite as _moved

globals().update({k: v for k, v in vars(_moved).items() if not k.startswith("__")})

if __name__ == "__main__":
    raise SystemExit(_moved.main())
