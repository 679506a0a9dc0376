"""The SQLite backend under test: one freshly migrated database file per test namespace
(``<namespace>.db``, absolute, so subprocesses reach it too) in a temporary directory of
this process's own, removed with its -wal and -shm files afterwards."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from pqueue.brokers import namespaces
from tests.backends import run_apart

NAME = "sqlite"
SERVICE = None

_ROOT = os.path.join(tempfile.gettempdir(), f"pqueue-sqlite-tests-{os.getpid()}")
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)  # the per-process folder, once emptied


def _dsn() -> str:
    return f"sqlite:///{os.path.join(_ROOT, 'pqueue.db')}"


def namespace_dsn(service_url: str | None, namespace: str) -> str:
    """A DSN on this test's own file, migrated here."""
    os.makedirs(_ROOT, exist_ok=True)
    database = namespaces.namespace(_dsn(), namespace)
    run_apart(database.create())
    return database.dsn


async def cleanup(service_url: str | None, namespace: str) -> None:
    await namespaces.namespace(_dsn(), namespace).drop()
