"""The perf suite: pytest-benchmark speed checks (``test_perf_*.py``, ratios measured side by side in one run), the
workload scale they read (:mod:`.perf_scale`), the optional pieces some need (:mod:`.optional`), the retrieval
comparisons and load generators, and :mod:`.suite`, which runs them all in one pytest run and regenerates
``BENCHMARKS.md`` from that run alone (``python -m perf.suite``): :mod:`.outcomes` records why a test
did not run, :mod:`.page` renders the header and :mod:`.sections` the sections, each from the run's figures.

:mod:`.gpu_check` is the paper-scale check of a GPU node, whose record is the page's last section
(:mod:`.gpu_section`).

It is the maintainers' lab, not the product: it runs from a checkout (the repository root on ``sys.path``) and is
not installed; no installed module imports it.
"""
