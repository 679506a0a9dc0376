"""Postgres restarts under real worker processes: nothing lost, no worker dies, and after
a graceful restart nothing runs twice. A throwaway cluster (initdb/pg_ctl, run as the
``postgres`` OS user) is stopped (``-m fast``) or crashed (``-m immediate``) twice for
about a second while two ``pqueue worker`` processes (lease 3 s) drain 600 jobs: the
exported :class:`pqueue.testing.faults.restarts.RestartContract`. Resume times are
measured by bench/restarts.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pqueue.testing.faults.restarts import RestartContract, Server
from tests.conftest import missing
from tests.private_servers import PrivatePostgres

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def pqueue_restart_server() -> Iterator[tuple[Server, str]]:
    """A throwaway Postgres cluster with pqueue's schema, removed afterwards."""
    problem = PrivatePostgres.missing()
    if problem is not None:
        missing("postgres", f"{problem}: Postgres restart tests cannot run")
    server = PrivatePostgres()
    try:
        server.start()
        server.migrate()
        yield server, server.url
    finally:
        server.remove()


class TestPostgresRestarts(RestartContract):
    pass
