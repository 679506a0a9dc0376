"""Shutdown signals: the first asks for a drain, the second exits at once with 128 + signum."""

from __future__ import annotations

import signal

from pqueue.worker.shutdown import ShutdownSignals


def test_first_signal_drains_second_forces_exit() -> None:
    stops: list[bool] = []
    exits: list[int] = []
    previous = signal.getsignal(signal.SIGTERM)
    with ShutdownSignals(lambda: stops.append(True), exit=exits.append) as handlers:
        assert signal.getsignal(signal.SIGTERM) == handlers.handle
        handlers.handle(signal.SIGTERM)
        assert stops == [True] and exits == []
        handlers.handle(signal.SIGINT)
        assert exits == [128 + signal.SIGINT]
    assert signal.getsignal(signal.SIGTERM) == previous  # restored
