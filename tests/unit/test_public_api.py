"""The names ``pqueue`` promises (``__all__``) are importable from it."""

from __future__ import annotations

import pqueue


def test_every_public_name_exists() -> None:
    missing = [name for name in pqueue.__all__ if not hasattr(pqueue, name)]
    assert missing == []


def test_the_contract_names_of_the_issues_are_public() -> None:
    for name in ("connect", "Client", "AsyncClient", "Router", "Worker", "Task", "Job", "SkipRetry", "Retry"):
        assert name in pqueue.__all__
