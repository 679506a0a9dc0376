"""Private Redis and Postgres servers we own, for faults that must not touch the shared
ones (:mod:`pqueue.chaos.servers`, where they live since ``pqueue chaos --private-broker``
starts them too), bound here to the test suite's ports (tests/ports.py, ADR 0133).

Plain classes, no pytest: the fixtures (tests/integration/*/servers.py) use them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pqueue.chaos import servers
from pqueue.chaos.servers import postgres_bin
from tests.ports import free_port

__all__ = ["PrivatePostgres", "PrivateRedis", "free_port", "postgres_bin"]


class PrivateRedis(servers.PrivateRedis):
    """:class:`pqueue.chaos.servers.PrivateRedis` on a port of this test process's block."""

    def __init__(self, workdir: Path, *, port: Callable[[], int] = free_port) -> None:
        super().__init__(workdir, port=port)


class PrivatePostgres(servers.PrivatePostgres):
    """:class:`pqueue.chaos.servers.PrivatePostgres` on a port of this test process's block."""

    def __init__(self, *, port: Callable[[], int] = free_port) -> None:
        super().__init__(port=port)
