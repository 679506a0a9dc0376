"""Worker settings: validation with clear errors, and the derived intervals."""

from __future__ import annotations

import pytest

from pqueue import ConfigError, Router, Worker
from pqueue.worker import UnknownTypePolicy, WorkerSettings


def test_defaults() -> None:
    s = WorkerSettings.build()
    assert s.concurrency == 10 and s.lease == 30 and s.shutdown_timeout == 30
    assert s.selection.weights == (("critical", 6), ("default", 3), ("low", 1)) and not s.selection.strict
    assert s.beat_interval == 10 and s.recover_interval == 5 and s.unknown_type is UnknownTypePolicy.RETRY


def test_queue_forms_and_strict_priority() -> None:
    assert WorkerSettings.build(queues="a:5,b").selection.weights == (("a", 5), ("b", 1))
    strict = WorkerSettings.build(queues=["high", "low"], strict=True).selection
    assert strict.strict and strict.order() == ["high", "low"]


def test_short_leases_recover_sooner() -> None:
    assert WorkerSettings.build(lease=2).recover_interval == 1


@pytest.mark.parametrize(
    "options",
    [
        {"concurrency": 0},
        {"concurrency": 2.5},
        {"lease": 0},
        {"lease": float("nan")},
        {"shutdown_timeout": -1},
        {"unknown_type": "ignore"},
        {"queues": {}},
        {"queues": {"a": 0}},
        {"poll_interval": 0},
    ],
)
def test_bad_settings_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        WorkerSettings.build(**options)  # type: ignore[arg-type]


def test_bad_queue_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="has space"):
        WorkerSettings.build(queues=["has space"])


def test_worker_needs_a_router_and_a_known_scheme() -> None:
    with pytest.raises(TypeError):
        Worker("memory://", object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Worker("memory://", Router(), concurrency=-1)
