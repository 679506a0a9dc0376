"""A backend whose driver is missing names both ways to install it (issue 12)."""

from __future__ import annotations

import sys

import pytest

import pqueue
from pqueue.errors import ConfigError


@pytest.mark.parametrize(
    ("dsn", "module", "extra"),
    [
        ("redis://127.0.0.1:6379/0", "pqueue.brokers.redis", "redis"),
        ("postgresql://postgres@127.0.0.1/test", "pqueue.brokers.postgres", "postgres"),
    ],
)
def test_missing_driver_names_the_index_and_the_clone_install(
    monkeypatch: pytest.MonkeyPatch, dsn: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    with pytest.raises(ConfigError) as caught:
        pqueue.connect(dsn)
    message = str(caught.value)
    assert f'pip install "pqueue-jobs[{extra}]"' in message
    assert f'pip install -e ".[{extra}]"' in message
