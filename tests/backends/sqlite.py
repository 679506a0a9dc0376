"""The SQLite backend under test: one freshly migrated database file per test namespace, in a
temporary directory of its own, removed afterwards."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from pqueue.brokers.sqlite import migrate

NAME = "sqlite"
SERVICE = None

_ROOT = os.path.join(tempfile.gettempdir(), f"pqueue-sqlite-tests-{os.getpid()}")
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)  # the per-process folder, once emptied


def _folder(namespace: str) -> str:
    return os.path.join(_ROOT, namespace)


def namespace_dsn(service_url: str | None, namespace: str) -> str:
    """A DSN on this test's own file (absolute, so subprocesses reach it too), migrated here."""
    folder = _folder(namespace)
    os.makedirs(folder, exist_ok=True)
    dsn = f"sqlite:///{os.path.join(folder, 'pqueue.db')}"
    migrate(dsn)
    return dsn


async def cleanup(service_url: str | None, namespace: str) -> None:
    shutil.rmtree(_folder(namespace), ignore_errors=True)
