"""Moved to :mod:`benchmarks.perf.retrieval_load` (the perf suite's folder); this path keeps ``python -m benchmarks.retrieval_load`` and
old imports working."""
from benchmarks.perf.retrieval_load import *  # noqa: F401,F403
from benchmarks.perf import retrieval_load as _moved

globals().update({k: v for k, v in vars(_moved).items() if not k.startswith("__")})

if __name__ == "__main__":
    raise SystemExit(_moved.main())
