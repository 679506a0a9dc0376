"""The memory backend under test: one named in-process store per test."""

from __future__ import annotations

from pqueue.brokers import namespaces

NAME = "memory"
SERVICE = None


def namespace_dsn(service_url: str | None, namespace: str) -> str:
    return namespaces.namespace("memory://", namespace).dsn


async def cleanup(service_url: str | None, namespace: str) -> None:
    await namespaces.namespace("memory://", namespace).drop()
