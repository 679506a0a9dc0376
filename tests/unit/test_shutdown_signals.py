"""Shutdown signals: the first asks for a drain, the second exits at once with 128 + signum."""

from __future__ import annotations

import signal

from pqueue.worker.shutdown import DUPLICATE_WITHIN, ShutdownSignals


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


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


def test_sigterm_delivered_twice_at_once_still_drains() -> None:
    """`timeout` signals the child and then its process group: one request, two deliveries."""
    clock = FakeClock()
    stops: list[bool] = []
    exits: list[int] = []
    handlers = ShutdownSignals(lambda: stops.append(True), exit=exits.append, clock=clock)
    handlers.handle(signal.SIGTERM)
    clock.now += DUPLICATE_WITHIN / 10
    handlers.handle(signal.SIGTERM)
    assert stops == [True] and exits == []
    clock.now += DUPLICATE_WITHIN
    handlers.handle(signal.SIGTERM)  # a later one is the operator insisting
    assert exits == [128 + signal.SIGTERM]


def test_quick_second_ctrl_c_forces_exit() -> None:
    clock = FakeClock()
    exits: list[int] = []
    handlers = ShutdownSignals(lambda: None, exit=exits.append, clock=clock)
    handlers.handle(signal.SIGINT)
    clock.now += 0.05
    handlers.handle(signal.SIGINT)
    assert exits == [128 + signal.SIGINT]


def test_leaving_after_a_sigterm_waits_for_its_second_delivery_with_the_handler_on() -> None:
    """A drain can end between `timeout`'s two kill() calls: the copy sent to the process
    group used to meet the default handler again and kill the drained process (exit 143)."""
    clock = FakeClock()
    waited: list[tuple[float, object]] = []
    handlers = ShutdownSignals(
        lambda: None, exit=lambda code: None, clock=clock,
        sleep=lambda s: waited.append((s, signal.getsignal(signal.SIGTERM))),
    )  # fmt: skip
    with handlers:
        handlers.handle(signal.SIGTERM)
        clock.now += 0.1
    assert len(waited) == 1 and 0 < waited[0][0] <= 0.5
    assert waited[0][1] == handlers.handle  # still ours while it waits


def test_leaving_without_a_signal_or_after_ctrl_c_does_not_wait() -> None:
    waited: list[float] = []
    with ShutdownSignals(lambda: None, exit=lambda code: None, sleep=waited.append):
        pass
    with ShutdownSignals(lambda: None, exit=lambda code: None, sleep=waited.append) as handlers:
        handlers.handle(signal.SIGINT)
    assert waited == []
