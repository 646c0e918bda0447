"""Moved to :mod:`benchmarks.perf.retrieval_servers` (the perf suite's folder); this path keeps ``python -m benchmarks.retrieval_servers`` and
old imports working."""
from benchmarks.perf.retrieval_servers import *  # noqa: F401,F403
from benchmarks.perf import retrieval_servers as _moved

globals().update({k: v for k, v in vars(_moved).items() if not k.startswith("__")})

if __name__ == "__main__":
    raise SystemExit(_moved.main())
