"""CI that requires Redis also runs the contract suite against it."""

from __future__ import annotations

import pytest

from tests import services
from tests.backends import available

pytestmark = pytest.mark.redis


def test_required_redis_means_the_contract_runs_on_redis() -> None:
    if "redis" not in services.required():
        pytest.skip("PQUEUE_TEST_REQUIRE does not name redis (CI sets it)")
    assert "redis" in available(), "tests/backends/redis.py is missing: the contract would skip Redis"
