"""The notification hub's rules (ADR 0134), on a scripted connection: one connection for
every channel, channels added while it reads, a reconnect that listens again and tells
each part it may have missed messages, and losses reported to the server's health."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from pqueue.brokers import hub as hub_module
from pqueue.brokers.hub import Hub


class Lost(Exception):
    """The scripted connection's "connection lost"."""


class FakeSession:
    def __init__(self, link: FakeLink, hub: Hub) -> None:
        self.link, self.hub = link, hub
        self.listens_while_reading = link.listens_while_reading
        self.inbox: asyncio.Queue[tuple[str, str] | Exception] = asyncio.Queue()
        self.channels: list[str] = []
        self.reads = 0

    async def listen(self, channels: Sequence[str]) -> None:
        self.channels += channels
        for channel in channels:
            self.hub.heard(channel)

    async def unlisten(self, channels: Sequence[str]) -> None:
        self.channels = [c for c in self.channels if c not in channels]

    async def read(self) -> None:
        self.reads += 1
        while True:
            item = await self.inbox.get()
            if isinstance(item, Exception):
                raise item
            self.hub.deliver(*item)

    async def close(self) -> None:
        self.link.closed += 1


class FakeLink:
    errors: tuple[type[BaseException], ...] = (Lost,)

    def __init__(self, *, listens_while_reading: bool = True) -> None:
        self.listens_while_reading = listens_while_reading
        self.sessions: list[FakeSession] = []
        self.lost_causes: list[BaseException] = []
        self.backs = 0
        self.closed = 0

    async def connect(self, hub: Hub) -> FakeSession:
        session = FakeSession(self, hub)
        self.sessions.append(session)
        return session

    def lost(self, error: BaseException) -> None:
        self.lost_causes.append(error)

    def back(self, sent_at: float) -> None:
        self.backs += 1


class Part:
    """A registered part: what it received, and how often it was told it missed some."""

    def __init__(self) -> None:
        self.got: list[str] = []
        self.missed = 0

    def on_message(self, payload: str) -> None:
        self.got.append(payload)

    def on_missed(self) -> None:
        self.missed += 1


async def _until(predicate: Callable[[], object]) -> None:
    for _ in range(5000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the hub never got there")


def _fails_first(link: FakeLink, failures: list[Exception]) -> None:
    """Make ``link`` raise each of ``failures`` in turn before it connects."""

    async def connect(hub: Hub) -> FakeSession:
        if failures:
            raise failures.pop()
        return await FakeLink.connect(link, hub)

    link.connect = connect  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_module, "MIN_BACKOFF", 0.001)
    monkeypatch.setattr(hub_module, "MAX_BACKOFF", 0.002)


@pytest.mark.parametrize("live", [True, False], ids=["listens-while-reading", "stops-reading-to-listen"])
async def test_one_connection_carries_every_channel_and_comes_back_after_a_loss(live: bool) -> None:
    link = FakeLink(listens_while_reading=live)
    hub = Hub(link, name="test-hub")
    wake, results = Part(), Part()
    hub.register("wake", wake.on_message, wake.on_missed)
    assert await hub.start(5) is True
    hub.register("results", results.on_message, results.on_missed)  # added while it reads
    assert await hub.start(5) is True
    [session] = link.sessions
    assert session.channels == ["wake", "results"] and hub.connections == 1
    session.inbox.put_nowait(("wake", "q1"))
    session.inbox.put_nowait(("results", "job-1"))
    session.inbox.put_nowait(("nobody", "x"))
    await _until(lambda: results.got)
    assert (wake.got, results.got) == (["q1"], ["job-1"])
    assert (wake.missed, results.missed) == (1, 1)  # on being heard: nothing before it came

    session.inbox.put_nowait(Lost("server closed the connection"))
    await _until(lambda: len(link.sessions) == 2 and hub.listening)
    again = link.sessions[1]
    assert sorted(again.channels) == ["results", "wake"] and hub.connections == 2
    assert [str(e) for e in link.lost_causes] == ["server closed the connection"]
    assert (wake.missed, results.missed) == (3, 3)  # when lost, and when heard again
    again.inbox.put_nowait(("wake", "q2"))
    await _until(lambda: wake.got == ["q1", "q2"])
    assert link.closed == 1

    await hub.close()
    assert not hub.listening and link.closed == 2
    assert (wake.missed, results.missed) == (4, 4)  # no waiter sleeps on a closed hub


async def test_a_channel_unregistered_is_no_longer_listened_to_or_delivered() -> None:
    link = FakeLink()
    hub = Hub(link, name="test-hub")
    cancels = Part()
    hub.register("cancel", cancels.on_message, cancels.on_missed)
    hub.register("wake", Part().on_message)
    await hub.start(5)
    hub.unregister("cancel")
    [session] = link.sessions
    await _until(lambda: session.channels == ["wake"])
    session.inbox.put_nowait(("cancel", "job-1"))
    session.inbox.put_nowait(("wake", "q"))
    await asyncio.sleep(0.01)
    assert cancels.got == [] and not hub.registered("cancel") and hub.listening
    with pytest.raises(ValueError, match="registered already"):
        hub.register("wake", Part().on_message)
    await hub.close()


async def test_failed_attempts_back_off_and_report_each_loss_until_one_connects() -> None:
    link = FakeLink()
    _fails_first(link, [Lost("connection refused")] * 3)
    hub = Hub(link, name="test-hub")
    hub.register("wake", Part().on_message)
    assert await hub.start(5) is True
    assert len(link.lost_causes) == 3 and hub.connections == 1 and link.backs >= 1
    await hub.close()


async def test_an_unexpected_failure_logs_its_traceback_once_until_a_connection_serves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    link = FakeLink()
    _fails_first(link, [RuntimeError("bug in the driver")] * 5)
    hub = Hub(link, name="test-hub")
    hub.register("wake", Part().on_message)
    with caplog.at_level("DEBUG", logger=hub_module.log.name):
        assert await hub.start(5) is True
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and errors[0].exc_info is not None  # not one every retry
    assert len([r for r in caplog.records if "failed again" in r.getMessage()]) == 4
    await hub.close()


async def test_a_listen_answered_after_an_outage_was_noticed_does_not_end_it() -> None:
    """A stopping server still answers the LISTEN it was sent just before another connection
    saw it go: that answer said nothing about the server being back, and ending the outage
    on it made the next failure log a second WARNING for the same outage."""
    from pqueue.brokers.health import ServerHealth

    health = ServerHealth("test server")

    class StoppingServer(FakeLink):
        def back(self, sent_at: float) -> None:
            super().back(sent_at)
            health.ok(sent_at)

    link = StoppingServer()
    hub = Hub(link, name="test-hub")
    hub.register("wake", Part().on_message, Part().on_missed)
    real_listen = FakeSession.listen

    async def listen(session: FakeSession, channels: Sequence[str]) -> None:
        health.lost("server closed the connection")  # noticed while the LISTEN was in flight
        await real_listen(session, channels)

    FakeSession.listen = listen  # type: ignore[method-assign]
    try:
        assert await hub.start(5) is True
        assert link.backs >= 1 and health.down  # the reply came, the outage stands
    finally:
        FakeSession.listen = real_listen  # type: ignore[method-assign]
        await hub.close()
