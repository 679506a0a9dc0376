"""Shared fixtures: every test that asks for a broker runs once per backend.

``backend_name`` is parametrised over the backends in ``tests/backends`` (ids
``[memory]``, ``[redis]``, ``[postgres]``; select with ``-m redis`` or ``-k memory``).
Each test gets its own namespace (a memory store, a Redis key prefix, a Postgres schema)
and removes it afterwards; shared data is never flushed or dropped.

Under pytest-xdist (``make pytest`` runs ``-n``, ADR 0133) the controller finds the
services once, before the workers start, and hands them the URLs: one testcontainers
container per service at most, stopped by the controller, and the skip warnings printed
by the controller, which is the process that writes the summary.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import ModuleType
from typing import NoReturn

import pytest
import pytest_asyncio

import pqueue
from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from tests import services
from tests.backends import available

pytest_plugins = ["pqueue.testing.plugin"]

_BACKENDS = available()
_services: dict[str, services.Service] = {}
_WORKERINPUT_KEY = "pqueue_services"


def pytest_configure(config: pytest.Config) -> None:
    shared = getattr(config, "workerinput", {}).get(_WORKERINPUT_KEY, {})
    for name, (url, problem) in shared.items():  # an xdist worker: the controller found them
        _services[name] = services.Service(name, url, problem)
    for name in _BACKENDS:
        config.addinivalue_line("markers", f"{name}: runs against the {name} backend")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        only = getattr(metafunc.function, "pqueue_backends", None)
        names = [n for n in _BACKENDS if only is None or n in only]
        metafunc.parametrize(
            "backend_name",
            [pytest.param(n, marks=getattr(pytest.mark, n)) for n in names],
            ids=names,
        )


def service_url(name: str | None) -> str | None:
    """The URL of a service, discovering it once per session; skip or fail if missing."""
    if name is None:
        return None
    if name not in _services:
        _services[name] = services.discover(name)
    service = _services[name]
    if service.url is None:
        missing(name, f"SKIPPED {name.upper()} BACKEND: {service.problem}")
    return service.url


def missing(name: str, reason: str) -> NoReturn:
    """Skip loudly for want of service/binary ``name`` -- or fail, if PQUEUE_TEST_REQUIRE names it."""
    if name in services.required():
        pytest.fail(f"PQUEUE_TEST_REQUIRE names {name}, but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config) -> None:
    """The xdist controller, before it starts the workers: find every service once."""
    for name in services.ENV_VARS:
        if name not in _services:
            _services[name] = services.discover(name)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    """Hand each xdist worker the services the controller found (URL, or why not)."""
    workerinput = node.workerinput  # type: ignore[attr-defined]
    workerinput[_WORKERINPUT_KEY] = {s.name: (s.url, s.problem) for s in _services.values()}


def pytest_sessionfinish(session: pytest.Session) -> None:
    for service in _services.values():
        if service.container is not None:
            service.container.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for service in _services.values():
        if service.problem:
            terminalreporter.write_line(
                f"WARNING: {service.name} tests were skipped: {service.problem}", red=True, bold=True
            )


@pytest.fixture(autouse=True)
def _no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """xdist's workers carry ``COLUMNS=80`` and ``LINES=24``, and the commands' console honours
    ``COLUMNS``: a test (and the CLI it starts) sees what a user's pipe sees unless it sets one."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def backend(backend_name: str) -> ModuleType:
    return _BACKENDS[backend_name]


@pytest.fixture
def namespace() -> str:
    return f"pqt{uuid.uuid4().hex[:12]}"


@pytest.fixture
def backend_dsn(backend: ModuleType, namespace: str) -> Iterator[str]:
    """A DSN that reaches only this test's namespace (also from subprocesses); the namespace
    is removed when the test ends, whoever wrote to it (worker processes included)."""
    url = service_url(backend.SERVICE)
    yield str(backend.namespace_dsn(url, namespace))
    # On a thread of its own: the test's event loop may still be the thread's current one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, backend.cleanup(url, namespace)).result()


@pytest_asyncio.fixture
async def pqueue_open_broker(
    backend: ModuleType, backend_dsn: str, namespace: str
) -> AsyncIterator[Callable[[ManualClock], Awaitable[FullBroker]]]:
    opened: list[FullBroker] = []

    async def open_broker(clock: ManualClock) -> FullBroker:
        broker = pqueue.connect(backend_dsn, clock=clock)
        await broker.open()
        opened.append(broker)
        return broker

    yield open_broker
    for broker in opened:
        await broker.close()
    await backend.cleanup(service_url(backend.SERVICE), namespace)


def only_backends(*names: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """Restrict a backend-parametrised test to some backends (e.g. those with processes)."""

    def mark(fn: Callable[..., object]) -> Callable[..., object]:
        fn.pqueue_backends = names  # type: ignore[attr-defined]
        return fn

    return mark
