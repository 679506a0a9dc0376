"""One module per backend under test; each opens brokers on an isolated namespace.

A backend module defines ``NAME``, ``SERVICE`` (None, 'redis', 'postgres' or
'redis_cluster') and
``namespace_dsn(service_url, namespace) -> str`` (a DSN whose brokers see only this
namespace, usable from subprocesses too) and ``async cleanup(service_url, namespace)``
(remove the namespace's data and nothing else). Both are the backend's
:mod:`pqueue.brokers.namespaces` (``pqueue chaos`` runs in one too). Adding a backend to
every contract and worker test is adding a module here and naming it in ``BACKENDS``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
from collections.abc import Coroutine
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")

BACKENDS = ("memory", "redis", "postgres", "sqlite", "redis_cluster")


def available() -> dict[str, ModuleType]:
    """The backend modules present in this checkout, by name."""
    found: dict[str, ModuleType] = {}
    for name in BACKENDS:
        try:
            found[name] = importlib.import_module(f"tests.backends.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tests.backends.{name}":
                raise
    return found


def run_apart(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` to its end on a thread and event loop of its own (a sync fixture may run
    while the test's event loop is the thread's current one)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()
