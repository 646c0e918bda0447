"""The perf suite: pytest-benchmark speed checks (``test_perf_*.py``, ratios measured side by side in one run), the
workload scale they read (:mod:`.perf_scale`), the retrieval comparisons and load generators, and
:mod:`.suite`, which runs them all and regenerates ``BENCHMARKS.md`` (``python -m benchmarks.perf.suite``).

Apart from the evaluation harness (:mod:`benchmarks.harness`) and the results pages (:mod:`benchmarks.pages`): each
folder of ``benchmarks/`` holds one job.
"""
