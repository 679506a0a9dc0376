"""A memory namespace: a named in-process store (``memory://<name>``), dropped whole."""

from __future__ import annotations

from dataclasses import dataclass

from pqueue.brokers import split_dsn
from pqueue.brokers.memory.broker import drop_store
from pqueue.brokers.namespaces import valid_name
from pqueue.errors import ConfigError


@dataclass(frozen=True, slots=True)
class MemoryNamespace:
    """The store ``name`` of this process."""

    name: str
    dsn: str

    async def create(self) -> None:
        """Nothing to make: the first broker makes the store."""

    async def drop(self) -> None:
        """Forget the store and its jobs."""
        drop_store(self.name)


def namespace(dsn: str, name: str) -> MemoryNamespace:
    """``memory://<name>``, with ``dsn``'s query parameters (``retention``)."""
    parts = split_dsn(dsn)
    if parts.scheme != "memory":
        raise ConfigError(f"not a memory DSN: {dsn!r}")
    query = f"?{parts.query}" if parts.query else ""
    return MemoryNamespace(valid_name(name), f"memory://{name}{query}")
