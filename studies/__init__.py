"""One-off studies: one folder each (``studies/<name>/``), apart from the installed packages.

A study asks one question of the product (``steer_envs``, ``agents``, ``baselines``, ``benchmarks``) and answers it
on a results page in ``docs/``. Its folder holds a README (question, answer, page, the commit it was made on, the
command that reruns it) and, while its code still earns its keep, that code with a quick mode and the tests that run
it (``studies/<name>/tests/``). A finished, expensive study is archived: its README names the commit whose checkout
reruns it, and its code is not in the tree.

Nothing here is installed (the wheel holds the four product packages only) and nothing installed imports it; run a
study from a checkout, at the repository root: ``python -m studies.<name>.run ...``.
"""
