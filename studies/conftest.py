"""The study tests run under the suite's session settings (``tests/conftest.py``): they write only under
``$STEER_ENVS_CACHE`` and a folder of the session, removed at its end, also when ``pytest studies`` runs alone."""

from tests.conftest import pytest_configure, pytest_unconfigure  # noqa: F401
