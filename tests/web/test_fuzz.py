"""Property-based tests from the OpenAPI document (schemathesis): no 5xx, every answer
matches the schema, with the admin token, the read-only token and none.

Bounded (``max_examples``) so the module runs in well under two minutes. The app runs on
the memory backend in process, holding whatever the fuzzer enqueued.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from prometheus_client import CollectorRegistry

from pqueue.web import create_app
from tests.web.conftest import ADMIN, READER, bearer

APP = create_app("memory://", token=ADMIN, read_token=READER, registry=CollectorRegistry())
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)

FUZZ = settings(
    max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)


@pytest.mark.parametrize("token", [ADMIN, READER, None], ids=["admin", "read", "none"])
@schema.parametrize()
@FUZZ
def test_api_keeps_its_schema_and_never_fails(case: schemathesis.Case, token: str | None) -> None:
    headers = bearer(token) if token else {}
    case.call_and_validate(headers=headers)
