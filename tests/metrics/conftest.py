"""The metrics tests reuse the worker tests' fixtures (a client and worker per backend)
and may need the ``prometheus`` / ``promtool`` binaries (Debian's ``prometheus`` package)."""

from __future__ import annotations

import shutil

import pytest

from tests import services
from tests.worker.conftest import client, make_worker

__all__ = ["client", "make_worker", "require_binary"]

INSTALL = "apt-get update && apt-get install -y --no-install-recommends prometheus"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "prometheus: needs the prometheus/promtool binaries (" + INSTALL + ")")


def require_binary(name: str) -> str:
    """The path of ``name``; skip loudly when it is missing, or fail when PQUEUE_TEST_REQUIRE
    names ``prometheus``."""
    path = shutil.which(name)
    if path is not None:
        return path
    problem = f"{name} is not installed ({INSTALL})"
    if "prometheus" in services.required():
        pytest.fail(f"PQUEUE_TEST_REQUIRE names prometheus, but {problem}", pytrace=False)
    pytest.skip(f"SKIPPED PROMETHEUS TEST: {problem}")
