"""pytest plugin: fixtures for testing handlers, and those the contract suite speaks through.

For your own handlers' tests, ask for ``pqueue_client`` (a :class:`~pqueue.Client`),
``pqueue_async_client`` (an :class:`~pqueue.AsyncClient`) or ``pqueue_memory_dsn``: each
test gets a memory store of its own, dropped at teardown (docs/testing.md).

For a backend's contract run, add ``pytest_plugins = ["pqueue.testing.plugin"]`` to a
conftest and define one fixture, ``pqueue_open_broker``: an async function that opens a
broker on *this test's own* namespace, with the given clock, and may be called more
than once per test (every call reaching the same jobs, as two processes would). It
closes what it opened at teardown and cleans the namespace without touching anyone
else's data. Example::

    @pytest_asyncio.fixture
    async def pqueue_open_broker():
        name = f"t{uuid.uuid4().hex}"
        opened = []
        async def open_broker(clock):
            broker = MyBroker(name, clock=clock)
            await broker.open()
            opened.append(broker)
            return broker
        yield open_broker
        for broker in opened:
            await broker.close()
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
import pytest_asyncio

from pqueue.broker import Capability, FullBroker
from pqueue.brokers.memory import drop_store
from pqueue.client import AsyncClient
from pqueue.clock import ManualClock
from pqueue.sync import Client

pytest.register_assert_rewrite("pqueue.testing.contract", "pqueue.testing.faults")

OpenBroker = Callable[[ManualClock], Awaitable[FullBroker]]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(*capabilities): the test needs these pqueue.Capability values"
    )


@pytest.fixture
def clock() -> ManualClock:
    """A fresh manual clock for each test."""
    return ManualClock()


@pytest_asyncio.fixture
async def broker(
    pqueue_open_broker: OpenBroker, clock: ManualClock, request: pytest.FixtureRequest
) -> FullBroker:
    """An opened broker on this test's namespace, driven by ``clock``."""
    opened = await pqueue_open_broker(clock)
    marker = request.node.get_closest_marker("requires")
    if marker is not None:
        missing = {Capability(c) for c in marker.args} - set(opened.capabilities)
        if missing:
            pytest.skip(f"{type(opened).__name__} does not declare {sorted(str(m) for m in missing)}")
    return opened


@pytest.fixture
def open_broker(pqueue_open_broker: OpenBroker, clock: ManualClock) -> Callable[[], Awaitable[FullBroker]]:
    """Open another broker on the same namespace and clock (a second producer/worker)."""

    async def _open() -> FullBroker:
        return await pqueue_open_broker(clock)

    return _open


# -- a memory-backed client for users' own tests (opt-in: ask for these names) ---------


@pytest.fixture
def pqueue_memory_dsn() -> Iterator[str]:
    """A ``memory://`` DSN of this test's own in-process store, dropped at teardown."""
    name = f"pqueue-test-{uuid.uuid4().hex[:12]}"
    yield f"memory://{name}"
    drop_store(name)


@pytest.fixture
def pqueue_client(pqueue_memory_dsn: str) -> Iterator[Client]:
    """A :class:`~pqueue.Client` on this test's own memory store (closed at teardown)."""
    with Client(pqueue_memory_dsn) as client:
        yield client


@pytest_asyncio.fixture
async def pqueue_async_client(pqueue_memory_dsn: str) -> AsyncIterator[AsyncClient]:
    """An :class:`~pqueue.AsyncClient` on this test's own memory store (closed at teardown)."""
    async with AsyncClient(pqueue_memory_dsn) as client:
        yield client
