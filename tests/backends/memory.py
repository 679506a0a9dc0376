"""The memory backend under test: one named in-process store per test."""

from __future__ import annotations

from pqueue.brokers.memory import drop_store

NAME = "memory"
SERVICE = None


def namespace_dsn(service_url: str | None, namespace: str) -> str:
    return f"memory://{namespace}"


async def cleanup(service_url: str | None, namespace: str) -> None:
    drop_store(namespace)
