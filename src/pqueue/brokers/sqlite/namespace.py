"""A SQLite namespace: the file ``<name>.db`` beside the DSN's file, made by migrating it
and dropped by removing it with its ``-wal``, ``-shm`` and ``-journal`` files."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass

from pqueue.brokers import split_dsn
from pqueue.brokers.namespaces import valid_name
from pqueue.brokers.sqlite.config import SqliteConfig
from pqueue.brokers.sqlite.migrate import migrate_async

COMPANIONS = ("", "-wal", "-shm", "-journal")
"""The database file and the files SQLite keeps beside it (named after it)."""


@dataclass(frozen=True, slots=True)
class SqliteNamespace:
    """The database file ``<name>.db`` in the directory of a SQLite DSN's file."""

    name: str
    dsn: str

    async def create(self) -> None:
        """Create the file and bring its schema up to date (``pqueue migrate``)."""
        await migrate_async(self.dsn)

    async def drop(self) -> None:
        """Remove the file and its companions; only these, whatever else the directory holds."""
        path = SqliteConfig.from_url(self.dsn).path
        await asyncio.to_thread(_remove, [path + suffix for suffix in COMPANIONS])


def _remove(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def namespace(dsn: str, name: str) -> SqliteNamespace:
    """``dsn`` naming ``<name>.db`` in its file's directory, spelled as given (a relative
    path stays relative to the working directory), its query parameters kept."""
    SqliteConfig.from_url(dsn)
    parts = split_dsn(dsn)
    folder = parts.path.rpartition("/")[0]
    base = dsn.partition("?")[0]
    namespaced = base[: len(base) - len(parts.path)] + f"{folder}/{valid_name(name)}.db"
    query = dsn.partition("?")[2]
    return SqliteNamespace(name, f"{namespaced}?{query}" if query else namespaced)
