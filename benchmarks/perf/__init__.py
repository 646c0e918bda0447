"""The perf suite: pytest-benchmark speed checks (``test_perf_*.py``, ratios measured side by side in one run), the
workload scale they read (:mod:`.perf_scale`), the optional pieces some need (:mod:`.optional`), the retrieval
comparisons and load generators, and :mod:`.suite`, which runs them all in one pytest run and regenerates
``BENCHMARKS.md`` from that run alone (``python -m benchmarks.perf.suite``): :mod:`.outcomes` records why a test
did not run, :mod:`.page` renders the header and :mod:`.sections` the sections, each from the run's figures.

Apart from the evaluation harness (:mod:`benchmarks.harness`) and the results pages (:mod:`benchmarks.pages`): each
folder of ``benchmarks/`` holds one job.
"""
